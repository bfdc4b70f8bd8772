/**
 * The node page's two routes, registered by lib/server on the read-only and
 * the secure port (there authorised as `nodes/proxy`, as every path without a
 * subresource of its own): `/ui`, the page, and `/ui/data`, the JSON it
 * refreshes itself from.
 *
 * @module
 */

import type { NodeStatus } from "../api/cluster_types.ts";
import type { Pod } from "../api/types.ts";
import type { ProbeResultView } from "../prober/mod.ts";
import type { Sample } from "../stats/mod.ts";
import { buildNodePageData, type NodePageInput } from "./data.ts";
import { NODE_PAGE_SCRIPT, NODE_PAGE_STYLE, nodePageHtml } from "./page.ts";

/** What the page reads from the agent. Every call is cheap: nothing here reads a cgroup file. */
export interface NodePageSource {
  nodeName: string;
  /** Epoch ms. */
  now(): number;
  /** The registered Node's status, or (standalone) the one the agent computes. */
  node(): Promise<{ source: "apiserver" | "local"; status: NodeStatus | undefined }>;
  /** The desired pods with their latest status (what `/pods` serves). */
  pods(): Pod[];
  /** A pod's probe results (ProbeManager.results). */
  probes(uid: string): readonly ProbeResultView[];
  /** Housekeeping's samples (StatsProvider.samples). */
  samples(of: "node" | { podUID: string } | { containerID: string }): Sample[];
}

/**
 * One snapshot of the agent for {@link buildNodePageData}.
 * @param source the agent
 * @returns the builder's input
 */
export async function collectNodePage(source: NodePageSource): Promise<NodePageInput> {
  const node = await source.node();
  const pods = source.pods().map((pod) => {
    const uid = pod.metadata.uid ?? "";
    const containerSamples = new Map<string, Sample[]>();
    const status = pod.status;
    for (
      const s of [
        ...(status?.initContainerStatuses ?? []),
        ...(status?.containerStatuses ?? []),
        ...(status?.ephemeralContainerStatuses ?? []),
      ]
    ) {
      const id = s.containerID?.replace(/^[a-z0-9]+:\/\//, "");
      if (id && s.state.running) containerSamples.set(id, source.samples({ containerID: id }));
    }
    return {
      pod,
      probes: source.probes(uid),
      samples: source.samples({ podUID: uid }),
      containerSamples,
    };
  });
  return {
    now: source.now(),
    nodeName: source.nodeName,
    nodeSource: node.source,
    nodeStatus: node.status,
    nodeSamples: source.samples("node"),
    pods,
  };
}

async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return btoa(String.fromCharCode(...new Uint8Array(digest)));
}

/**
 * The page's Content-Security-Policy: its own inline script and style (by
 * hash), requests to its own origin, nothing else.
 * @returns the header value
 */
export async function nodePageCsp(): Promise<string> {
  const [script, style] = await Promise.all([sha256(NODE_PAGE_SCRIPT), sha256(NODE_PAGE_STYLE)]);
  return [
    "default-src 'none'",
    `script-src 'sha256-${script}'`,
    `style-src 'sha256-${style}'`,
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join("; ");
}

type Route = (req: Request, url: URL) => Response | Promise<Response>;

function getOnly(route: Route): Route {
  return (req, url) =>
    req.method === "GET" || req.method === "HEAD"
      ? route(req, url)
      : new Response("method not allowed\n", { status: 405, headers: { allow: "GET, HEAD" } });
}

/**
 * `/ui` and `/ui/data`.
 * @param source the agent
 * @returns the routes by exact path
 */
export function nodePageRoutes(source: NodePageSource): Record<string, Route> {
  const html = nodePageHtml(source.nodeName);
  const csp = nodePageCsp();
  const common = { "cache-control": "no-store", "x-content-type-options": "nosniff" };
  return {
    "/ui": getOnly(async () =>
      new Response(html, {
        headers: {
          ...common,
          "content-type": "text/html; charset=utf-8",
          "content-security-policy": await csp,
        },
      })
    ),
    "/ui/data": getOnly(async () =>
      new Response(JSON.stringify(buildNodePageData(await collectNodePage(source))), {
        headers: { ...common, "content-type": "application/json" },
      })
    ),
  };
}
