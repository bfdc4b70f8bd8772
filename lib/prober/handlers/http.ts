/**
 * The httpGet probe, as upstream's pkg/probe/http `DoHTTPProbe`: the request
 * and its sending (same-host redirects, no certificate checks, at most 10 KiB
 * of the body) are lib/probe's, shared with the lifecycle hook; this judges
 * the answer. 200 ≤ code < 400 is success; a 3xx that ends the chain (another
 * host, no Location) counts as success with the warning "Probe terminated
 * redirects".
 *
 * @module
 */

import type { Container, HTTPGetAction } from "../../api/types.ts";
import { buildHttpProbeRequest, type HttpProbeRequest, sendHttpGet } from "../../probe/mod.ts";
import type { ProbeOutcome } from "../types.ts";

/**
 * Runs an httpGet probe once.
 * @param action the probe's httpGet
 * @param container the container (named ports)
 * @param podIP the default host
 * @param opts timeout, user agent, cancellation
 * @returns the outcome; never throws
 */
export async function httpGetProbe(
  action: HTTPGetAction,
  container: Container,
  podIP: string,
  opts: { timeoutSeconds: number; userAgent: string; signal: AbortSignal },
): Promise<ProbeOutcome> {
  let request: HttpProbeRequest;
  try {
    request = buildHttpProbeRequest(action, container, podIP, opts.userAgent);
  } catch (err) {
    return { result: "unknown", output: err instanceof Error ? err.message : String(err) };
  }
  const res = await sendHttpGet(request, {
    client: "probe",
    timeoutMs: opts.timeoutSeconds * 1000,
    signal: opts.signal,
  });
  if (res.kind === "cancelled") return { result: "unknown", output: "probe cancelled" };
  if (res.kind === "error") return { result: "failure", output: res.message };
  if (res.status >= 200 && res.status < 300) return { result: "success", output: res.body };
  if (res.status >= 300 && res.status < 400) {
    return { result: "success", output: `Probe terminated redirects, Response body: ${res.body}` };
  }
  return { result: "failure", output: `HTTP probe failed with statuscode: ${res.status}` };
}
