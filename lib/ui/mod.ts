/**
 * The node page (`/ui`): the node's conditions, capacity, allocatable and
 * pressure, every pod with its containers, states, restarts and probe results,
 * and CPU and memory sparklines from housekeeping's samples of the last 2
 * minutes; each pod links to its sync trace. One HTML document with its script
 * inline (page.ts), refreshing itself from `/ui/data` (data.ts builds it,
 * sparkline.ts draws the series); lib/server registers the routes (routes.ts).
 *
 * ```ts
 * const routes = nodePageRoutes({
 *   nodeName, now: () => clock.now(),
 *   node: async () => ({ source: "local", status: await localNode.status() }),
 *   pods: () => kubelet.podsWithStatus(),
 *   probes: (uid) => probes.results(uid),
 *   samples: (of) => stats.samples(of),
 * });
 * ```
 *
 * @module
 */

export {
  buildNodePageData,
  type ConditionView,
  type ContainerView,
  type NodePageData,
  type NodePageInput,
  type NodeView,
  type PodInput,
  type PodView,
  probeHandler,
  type ProbeView,
  SPARK_WINDOW_MS,
} from "./data.ts";
export { LocalNodeStatus, type LocalNodeStatusOptions } from "./local_node.ts";
export { NODE_PAGE_SCRIPT, NODE_PAGE_STYLE, nodePageHtml, REFRESH_MS } from "./page.ts";
export { collectNodePage, nodePageCsp, nodePageRoutes, type NodePageSource } from "./routes.ts";
export {
  cpuSeries,
  memorySeries,
  type SeriesPoint,
  SPARK_HEIGHT,
  SPARK_WIDTH,
  type Sparkline,
  sparkline,
  type SparklineBox,
} from "./sparkline.ts";
