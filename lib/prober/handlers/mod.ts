/**
 * The probe handlers (exec, httpGet, tcpSocket, grpc) and {@link runProbe},
 * which picks the one a probe names, as upstream's prober.runProbe.
 *
 * @module
 */

import type { Probe } from "../../api/types.ts";
import type { ProbeOutcome, ProbeTarget } from "../types.ts";
import { PROBE_DEFAULTS } from "../types.ts";
import { execProbe } from "./exec.ts";
import { grpcProbe } from "./grpc.ts";
import { httpGetProbe } from "./http.ts";
import { tcpSocketProbe } from "./tcp.ts";

export { execProbe, MAX_PROBE_OUTPUT_BYTES } from "./exec.ts";
export { grpcProbe } from "./grpc.ts";
export { httpGetProbe } from "./http.ts";
export { tcpSocketProbe } from "./tcp.ts";

/**
 * Runs whichever handler the probe names, once, with the probe's timeout.
 * @param probe the probe from the spec
 * @param target the container and how to reach it
 * @param signal cancels the probe (its worker stopped)
 * @returns the outcome; `unknown` when the probe names no handler; never throws
 */
export function runProbe(
  probe: Probe,
  target: ProbeTarget,
  signal: AbortSignal,
): Promise<ProbeOutcome> {
  const timeoutSeconds = probe.timeoutSeconds !== undefined && probe.timeoutSeconds > 0
    ? probe.timeoutSeconds
    : PROBE_DEFAULTS.timeoutSeconds;
  const net = { timeoutSeconds, userAgent: target.userAgent, signal };
  if (probe.exec) return execProbe(probe.exec, target, timeoutSeconds, signal);
  if (probe.httpGet) return httpGetProbe(probe.httpGet, target.container, target.podIP, net);
  if (probe.tcpSocket) return tcpSocketProbe(probe.tcpSocket, target.container, target.podIP, net);
  if (probe.grpc) return grpcProbe(probe.grpc, target.podIP, net);
  return Promise.resolve({
    result: "unknown",
    output: `missing probe handler for ${target.podName}:${target.container.name}`,
  });
}
