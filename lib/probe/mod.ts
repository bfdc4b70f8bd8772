/**
 * What probes and lifecycle hooks share, as upstream's pkg/probe does beside
 * pkg/kubelet/prober: a container's port by name or number, and the httpGet
 * client — the request an HTTPGetAction makes and one GET with its redirects
 * by the rules of Go's http.Client, as the kubelet sets it up for probes and
 * for hooks. Below lib/prober and lib/kuberuntime, which both use it.
 *
 * ```ts
 * const request = buildHttpProbeRequest(action, container, podIP, kubeUserAgent("lifecycle"));
 * const res = await sendHttpGet(request, { client: "hook", timeoutMs: 30_000, signal });
 * if (res.kind === "error" && res.schemeMismatch) { ... } // HTTPS answered in plain HTTP
 * ```
 *
 * @module
 */

export { resolveContainerPort } from "./port.ts";
export { buildHttpProbeRequest, type HttpProbeRequest, kubeUserAgent } from "./http_request.ts";
export {
  type HttpGetClient,
  type HttpGetOptions,
  type HttpGetResult,
  MAX_RESPONSE_BODY_BYTES,
  sendHttpGet,
} from "./http_client.ts";
