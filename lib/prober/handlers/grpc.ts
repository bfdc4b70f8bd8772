/**
 * The grpc probe, as upstream's pkg/probe/grpc: `grpc.health.v1.Health/Check`
 * on the pod IP and the probe's port, over a fresh insecure connection with
 * one deadline for dialling and the call. SERVING is success; anything else,
 * including a server without the health service, is a failure whose output
 * says which.
 *
 * @module
 */

import type { GRPCAction } from "../../api/types.ts";
import { checkHealth } from "../../cri/health_check.ts";
import { GrpcCode } from "../../cri/mod.ts";
import type { ProbeOutcome } from "../types.ts";
import { joinHostPort } from "../../util/net.ts";

/**
 * Runs a grpc probe once.
 * @param action the probe's grpc action
 * @param podIP the host (grpc probes have no host field)
 * @param opts timeout, user agent, cancellation
 * @returns the outcome; never throws
 */
export async function grpcProbe(
  action: GRPCAction,
  podIP: string,
  opts: { timeoutSeconds: number; userAgent: string; signal: AbortSignal },
): Promise<ProbeOutcome> {
  const addr = joinHostPort(podIP, action.port);
  const service = action.service ?? "";
  const seconds = `${opts.timeoutSeconds}s`;
  const outcome = await checkHealth({
    host: podIP,
    port: action.port,
    service,
    timeoutMs: opts.timeoutSeconds * 1000,
    userAgent: opts.userAgent,
    signal: opts.signal,
  });
  if (opts.signal.aborted) return { result: "unknown", output: "probe cancelled" };
  switch (outcome.kind) {
    case "connect":
      return {
        result: "failure",
        output: outcome.timedOut
          ? `timeout: failed to connect service ${
            JSON.stringify(addr)
          } within ${seconds}: ${outcome.message}`
          : `error: failed to connect service at ${JSON.stringify(addr)}: ${outcome.message}`,
      };
    case "call":
      if (outcome.code === GrpcCode.UNIMPLEMENTED) {
        return {
          result: "failure",
          output:
            `error: this server does not implement the grpc health protocol (grpc.health.v1.Health): ${outcome.message}`,
        };
      }
      if (outcome.code === GrpcCode.DEADLINE_EXCEEDED) {
        return {
          result: "failure",
          output: `timeout: health rpc did not complete within ${seconds}`,
        };
      }
      return { result: "failure", output: `error: health rpc probe failed: ${outcome.message}` };
    case "status":
      return outcome.status === "SERVING"
        ? { result: "success", output: "service healthy" }
        : { result: "failure", output: `service unhealthy (responded with "${outcome.status}")` };
  }
}
