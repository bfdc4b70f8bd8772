/**
 * `/metrics/resource`: the kubelet's resource metrics (what metrics-server
 * scrapes), built from the cpu-and-memory Summary as upstream's
 * resourceMetricsCollector does: STABLE metrics with "[STABLE] " help, the
 * labels container/pod/namespace, each value stamped with its sample time
 * in ms (container_start_time_seconds carries none), and the scrape error
 * gauges (`scrape_error` deprecated since 1.29 in favour of `resource_scrape_error`).
 *
 * @module
 */

import { ExpositionWriter } from "../metrics/exposition.ts";
import type { Summary } from "./summary_types.ts";

const CPU_NODE = "[STABLE] Cumulative cpu time consumed by the node in core-seconds";
const MEM_NODE = "[STABLE] Current working set of the node in bytes";
const CPU_CONTAINER = "[STABLE] Cumulative cpu time consumed by the container in core-seconds";
const MEM_CONTAINER = "[STABLE] Current working set of the container in bytes";
const START = "[STABLE] Start time of the container since unix epoch in seconds";
const CPU_POD = "[STABLE] Cumulative cpu time consumed by the pod in core-seconds";
const MEM_POD = "[STABLE] Current working set of the pod in bytes";
const SCRAPE = "1 if there was an error while getting container metrics, 0 otherwise";

/**
 * Renders the resource metrics.
 * @param summary the cpu-and-memory Summary, or undefined when building it failed
 * @returns the exposition text
 */
export function renderResourceMetrics(summary: Summary | undefined): string {
  const w = new ExpositionWriter();
  const error = summary === undefined ? 1 : 0;
  w.family("scrape_error", `[ALPHA] (Deprecated since 1.29.0) ${SCRAPE}`, "gauge").add({}, error);
  w.family("resource_scrape_error", `[STABLE] ${SCRAPE}`, "gauge").add({}, error);
  if (!summary) return w.render();
  const ms = (t: string) => Date.parse(t);
  const { node } = summary;
  if (node.cpu?.usageCoreNanoSeconds !== undefined) {
    w.family("node_cpu_usage_seconds_total", CPU_NODE, "counter")
      .add({}, node.cpu.usageCoreNanoSeconds / 1e9, ms(node.cpu.time));
  }
  if (node.memory?.workingSetBytes !== undefined) {
    w.family("node_memory_working_set_bytes", MEM_NODE, "gauge")
      .add({}, node.memory.workingSetBytes, ms(node.memory.time));
  }
  for (const pod of summary.pods) {
    const { name: podName, namespace } = pod.podRef;
    for (const c of pod.containers) {
      const labels = { container: c.name, pod: podName, namespace };
      const start = ms(c.startTime);
      if (start > 0) {
        w.family("container_start_time_seconds", START, "gauge").add(labels, start / 1000);
      }
      if (c.cpu?.usageCoreNanoSeconds !== undefined) {
        w.family("container_cpu_usage_seconds_total", CPU_CONTAINER, "counter")
          .add(labels, c.cpu.usageCoreNanoSeconds / 1e9, ms(c.cpu.time));
      }
      if (c.memory?.workingSetBytes !== undefined) {
        w.family("container_memory_working_set_bytes", MEM_CONTAINER, "gauge")
          .add(labels, c.memory.workingSetBytes, ms(c.memory.time));
      }
    }
    const labels = { pod: podName, namespace };
    if (pod.cpu?.usageCoreNanoSeconds !== undefined) {
      w.family("pod_cpu_usage_seconds_total", CPU_POD, "counter")
        .add(labels, pod.cpu.usageCoreNanoSeconds / 1e9, ms(pod.cpu.time));
    }
    if (pod.memory?.workingSetBytes !== undefined) {
      w.family("pod_memory_working_set_bytes", MEM_POD, "gauge")
        .add(labels, pod.memory.workingSetBytes, ms(pod.memory.time));
    }
  }
  return w.render();
}
