/**
 * `/metrics/cadvisor`: the common cAdvisor series as the kubelet serves them,
 * for the root cgroup ("/"), the system containers, each pod cgroup and each
 * container, labelled `container`, `id` (cgroup path), `image`, `name`
 * (container id), `namespace` and `pod` (empty where not applicable, as
 * cAdvisor writes them). Usage series carry the sample's time in ms; spec,
 * start-time and last-seen series carry none, as in cAdvisor.
 *
 * One deliberate difference: container_memory_failcnt is typed gauge (cAdvisor:
 * counter) so that `promtool check metrics` passes.
 *
 * Left out: container_spec_cpu_* (the cgroup reader does not read quota,
 * period or shares), container_processes, container_file_descriptors and
 * container_sockets (they need a /proc scan), and the pause
 * containers (their cgroups are not housekept).
 *
 * @module
 */

import { ExpositionWriter } from "../metrics/exposition.ts";
import type { CgroupSnapshot, NetworkSnapshot, StatsSnapshot } from "./snapshot.ts";

type Labels = Record<string, string>;

function one(
  w: ExpositionWriter,
  c: CgroupSnapshot,
  labels: Labels,
  startTimeMs: number,
  nowMs: number,
  network: NetworkSnapshot | undefined,
): void {
  const s = c.sample;
  if (!s) return;
  const t = s.timestampMs;
  const put = (
    name: string,
    help: string,
    type: "counter" | "gauge",
    v: number | undefined,
    extra: Labels = {},
    ts: number | null = t,
  ) => {
    if (v !== undefined && Number.isFinite(v)) {
      w.family(name, help, type).add({ ...labels, ...extra }, v, ts ?? undefined);
    }
  };
  const sec = (ns: number | undefined) => (ns === undefined ? undefined : ns / 1e9);
  put(
    "container_cpu_usage_seconds_total",
    "Cumulative cpu time consumed in seconds.",
    "counter",
    sec(s.cpuUsageNs),
    { cpu: "total" },
  );
  put(
    "container_cpu_user_seconds_total",
    "Cumulative user cpu time consumed in seconds.",
    "counter",
    sec(s.cpuUserNs),
  );
  put(
    "container_cpu_system_seconds_total",
    "Cumulative system cpu time consumed in seconds.",
    "counter",
    sec(s.cpuSystemNs),
  );
  put(
    "container_cpu_cfs_periods_total",
    "Number of elapsed enforcement period intervals.",
    "counter",
    s.cpuPeriods,
  );
  put(
    "container_cpu_cfs_throttled_periods_total",
    "Number of throttled period intervals.",
    "counter",
    s.cpuThrottledPeriods,
  );
  put(
    "container_cpu_cfs_throttled_seconds_total",
    "Total time duration the container has been throttled.",
    "counter",
    sec(s.cpuThrottledNs),
  );
  put(
    "container_memory_usage_bytes",
    "Current memory usage in bytes, including all memory regardless of when it was accessed",
    "gauge",
    s.memoryUsageBytes,
  );
  put(
    "container_memory_working_set_bytes",
    "Current working set in bytes.",
    "gauge",
    s.memoryWorkingSetBytes,
  );
  put("container_memory_rss", "Size of RSS in bytes.", "gauge", s.memoryRssBytes);
  put(
    "container_memory_cache",
    "Number of bytes of page cache memory.",
    "gauge",
    s.memoryCacheBytes,
  );
  put(
    "container_memory_failcnt",
    "Number of memory usage hits limits",
    // cAdvisor types it a counter, which `promtool check metrics` rejects for
    // lacking "_total"; the name stays (dashboards use it), the type is gauge.
    "gauge",
    s.memoryLimitHits,
  );
  for (const scope of ["container", "hierarchy"]) {
    const help = "Cumulative count of memory allocation failures.";
    put("container_memory_failures_total", help, "counter", s.memoryPageFaults, {
      failure_type: "pgfault",
      scope,
    });
    put("container_memory_failures_total", help, "counter", s.memoryMajorPageFaults, {
      failure_type: "pgmajfault",
      scope,
    });
  }
  if (s.memoryLimitBytes !== undefined) {
    // cAdvisor reports an unlimited cgroup's limit as 0.
    const limit = Number.isFinite(s.memoryLimitBytes) ? s.memoryLimitBytes : 0;
    put(
      "container_spec_memory_limit_bytes",
      "Memory limit for the container.",
      "gauge",
      limit,
      {},
      null,
    );
  }
  // From the pids controller, as cAdvisor's process metrics give them (its
  // other process series need a /proc scan); an unlimited pids.max is 0.
  put(
    "container_threads",
    "Number of threads running inside the container",
    "gauge",
    s.pidsCurrent,
  );
  if (s.pidsMax !== undefined) {
    put(
      "container_threads_max",
      "Maximum number of threads allowed inside the container, infinity if value is zero",
      "gauge",
      Number.isFinite(s.pidsMax) ? s.pidsMax : 0,
    );
  }
  for (const d of c.stats?.io ?? []) {
    const device = { device: `${d.major}:${d.minor}` };
    put(
      "container_fs_reads_bytes_total",
      "Cumulative count of bytes read",
      "counter",
      d.readBytes,
      device,
    );
    put(
      "container_fs_writes_bytes_total",
      "Cumulative count of bytes written",
      "counter",
      d.writeBytes,
      device,
    );
    put(
      "container_fs_reads_total",
      "Cumulative count of reads completed",
      "counter",
      d.readOps,
      device,
    );
    put(
      "container_fs_writes_total",
      "Cumulative count of writes completed",
      "counter",
      d.writeOps,
      device,
    );
  }
  for (const i of network?.interfaces ?? []) {
    const iface = { interface: i.name };
    const nt = network!.timeMs;
    put(
      "container_network_receive_bytes_total",
      "Cumulative count of bytes received",
      "counter",
      i.rxBytes,
      iface,
      nt,
    );
    put(
      "container_network_transmit_bytes_total",
      "Cumulative count of bytes transmitted",
      "counter",
      i.txBytes,
      iface,
      nt,
    );
    put(
      "container_network_receive_errors_total",
      "Cumulative count of errors encountered while receiving",
      "counter",
      i.rxErrors,
      iface,
      nt,
    );
    put(
      "container_network_transmit_errors_total",
      "Cumulative count of errors encountered while transmitting",
      "counter",
      i.txErrors,
      iface,
      nt,
    );
  }
  put(
    "container_last_seen",
    "Last time a container was seen by the exporter",
    "gauge",
    Math.floor(nowMs / 1000),
    {},
    null,
  );
  put(
    "container_start_time_seconds",
    "Start time of the container since unix epoch in seconds.",
    "gauge",
    startTimeMs / 1000,
    {},
    null,
  );
}

/**
 * Renders the cAdvisor metrics.
 * @param snap the provider's snapshot
 * @returns the exposition text
 */
export function renderCadvisorMetrics(snap: StatsSnapshot): string {
  const w = new ExpositionWriter();
  const blank = { container: "", image: "", name: "", namespace: "", pod: "" };
  const { node } = snap;
  const m = node.machine;
  const machine = { boot_id: m.bootID, machine_id: m.machineID, system_uuid: m.systemUUID };
  w.family("machine_cpu_cores", "Number of logical CPU cores.", "gauge").add(machine, m.numCores);
  w.family("machine_memory_bytes", "Amount of memory installed on the machine.", "gauge")
    .add(machine, m.memoryCapacityBytes);
  one(w, node.cgroup, { ...blank, id: "/" }, node.startTimeMs, snap.timeMs, node.network);
  const written = new Set(["/"]);
  for (const s of node.systemContainers) {
    // Two system containers may share a cgroup (or be the root): write each once.
    if (written.has(s.cgroup.path)) continue;
    written.add(s.cgroup.path);
    one(w, s.cgroup, { ...blank, id: s.cgroup.path }, s.startTimeMs, snap.timeMs, undefined);
  }
  for (const p of snap.pods) {
    const pod = { ...blank, id: p.cgroup.path, namespace: p.namespace, pod: p.name };
    one(w, p.cgroup, pod, p.startTimeMs, snap.timeMs, p.network);
    for (const c of p.containers) {
      const labels = { ...pod, container: c.name, id: c.cgroup.path, image: c.image, name: c.id };
      one(w, c.cgroup, labels, c.startTimeMs, snap.timeMs, undefined);
    }
  }
  return w.render();
}
