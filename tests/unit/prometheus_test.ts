import assert from "node:assert/strict";
import {
  escapeLabelValue,
  ExpositionWriter,
  formatValue,
  renderFamilies,
} from "../../lib/metrics/mod.ts";
import {
  renderCadvisorMetrics,
  renderResourceMetrics,
  type StatsSnapshot,
  type Summary,
} from "../../lib/stats/mod.ts";

Deno.test("formatValue() writes numbers as Go's FormatFloat(v, 'g', -1)", () => {
  assert.equal(formatValue(0), "0");
  assert.equal(formatValue(957.57), "957.57");
  assert.equal(formatValue(123456), "123456");
  assert.equal(formatValue(1234567), "1.234567e+06");
  assert.equal(formatValue(1767225601), "1.767225601e+09");
  assert.equal(formatValue(0.0001), "0.0001");
  assert.equal(formatValue(0.00001), "1e-05");
  assert.equal(formatValue(Infinity), "+Inf");
  assert.equal(formatValue(NaN), "NaN");
});

Deno.test("escapeLabelValue() escapes backslash, quote and newline", () => {
  assert.equal(escapeLabelValue('a\\b"c\nd'), 'a\\\\b\\"c\\nd');
});

Deno.test("ExpositionWriter writes HELP/TYPE once per family, families sorted, samples by labels", () => {
  const w = new ExpositionWriter();
  w.family("zz_total", "Z.", "counter").add({ b: "2" }, 1);
  w.family("aa", "A\nhelp", "gauge").add({}, 5, 1000);
  w.family("zz_total", "Z.", "counter").add({ b: "1" }, 2);
  assert.equal(
    w.render(),
    [
      "# HELP aa A\\nhelp",
      "# TYPE aa gauge",
      "aa 5 1000",
      "# HELP zz_total Z.",
      "# TYPE zz_total counter",
      'zz_total{b="1"} 2',
      'zz_total{b="2"} 1',
      "",
    ].join("\n"),
  );
  assert.throws(() => w.family("aa", "A", "counter"), /declared as gauge/);
  assert.throws(
    () =>
      renderFamilies([{
        name: "x",
        help: "",
        type: "gauge",
        samples: [{ labels: { "1a": "" }, value: 1 }],
      }]),
    /invalid label name/,
  );
});

const T = "2026-01-01T00:01:00Z";
const summary: Summary = {
  node: {
    nodeName: "n",
    startTime: "2026-01-01T00:00:00Z",
    cpu: { time: T, usageNanoCores: 5, usageCoreNanoSeconds: 1_500_000_000 },
    memory: { time: T, workingSetBytes: 2048 },
  },
  pods: [{
    podRef: { name: "web", namespace: "ns", uid: "u" },
    startTime: "2026-01-01T00:00:00Z",
    containers: [{
      name: 'ap"p',
      startTime: "2026-01-01T00:00:01Z",
      cpu: { time: T, usageCoreNanoSeconds: 1e9 },
      memory: { time: T, workingSetBytes: 1024 },
    }],
    cpu: { time: T, usageCoreNanoSeconds: 2e9 },
    memory: { time: T, workingSetBytes: 4096 },
  }],
};

Deno.test("renderResourceMetrics() matches the kubelet's /metrics/resource text", () => {
  const ts = Date.parse(T);
  assert.equal(
    renderResourceMetrics(summary),
    [
      "# HELP container_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the container in core-seconds",
      "# TYPE container_cpu_usage_seconds_total counter",
      `container_cpu_usage_seconds_total{container="ap\\"p",namespace="ns",pod="web"} 1 ${ts}`,
      "# HELP container_memory_working_set_bytes [STABLE] Current working set of the container in bytes",
      "# TYPE container_memory_working_set_bytes gauge",
      `container_memory_working_set_bytes{container="ap\\"p",namespace="ns",pod="web"} 1024 ${ts}`,
      "# HELP container_start_time_seconds [STABLE] Start time of the container since unix epoch in seconds",
      "# TYPE container_start_time_seconds gauge",
      'container_start_time_seconds{container="ap\\"p",namespace="ns",pod="web"} 1.767225601e+09',
      "# HELP node_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the node in core-seconds",
      "# TYPE node_cpu_usage_seconds_total counter",
      `node_cpu_usage_seconds_total 1.5 ${ts}`,
      "# HELP node_memory_working_set_bytes [STABLE] Current working set of the node in bytes",
      "# TYPE node_memory_working_set_bytes gauge",
      `node_memory_working_set_bytes 2048 ${ts}`,
      "# HELP pod_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the pod in core-seconds",
      "# TYPE pod_cpu_usage_seconds_total counter",
      `pod_cpu_usage_seconds_total{namespace="ns",pod="web"} 2 ${ts}`,
      "# HELP pod_memory_working_set_bytes [STABLE] Current working set of the pod in bytes",
      "# TYPE pod_memory_working_set_bytes gauge",
      `pod_memory_working_set_bytes{namespace="ns",pod="web"} 4096 ${ts}`,
      "# HELP resource_scrape_error [STABLE] 1 if there was an error while getting container metrics, 0 otherwise",
      "# TYPE resource_scrape_error gauge",
      "resource_scrape_error 0",
      "# HELP scrape_error [ALPHA] (Deprecated since 1.29.0) 1 if there was an error while getting container metrics, 0 otherwise",
      "# TYPE scrape_error gauge",
      "scrape_error 0",
      "",
    ].join("\n"),
  );
});

Deno.test("renderResourceMetrics() reports resource_scrape_error 1 when the summary failed", () => {
  const text = renderResourceMetrics(undefined);
  assert.match(text, /^resource_scrape_error 1$/m);
  assert.match(text, /^scrape_error 1$/m);
  assert.doesNotMatch(text, /node_cpu/);
});

Deno.test("renderCadvisorMetrics() labels series with container, id, image, name, namespace, pod", () => {
  const t = Date.UTC(2026, 0, 1, 0, 1);
  const snap: StatsSnapshot = {
    timeMs: t,
    node: {
      nodeName: "n",
      startTimeMs: 0,
      cgroup: { path: "/", sample: { timestampMs: t, cpuUsageNs: 3e9, memoryUsageBytes: 10 } },
      machine: {
        bootTimeMs: 0,
        numCores: 2,
        memoryCapacityBytes: 1024,
        bootID: "b",
        machineID: "m",
        systemUUID: "",
      },
      systemContainers: [{ name: "kubelet", startTimeMs: 0, cgroup: { path: "/" } }],
    },
    pods: [{
      uid: "u",
      name: "web",
      namespace: "ns",
      startTimeMs: t,
      cgroup: { path: "/kubepods/podu", sample: { timestampMs: t, memoryUsageBytes: 7 } },
      network: {
        timeMs: t,
        interfaces: [{
          name: "eth0",
          rxBytes: 100,
          rxPackets: 1,
          rxErrors: 0,
          rxDropped: 0,
          txBytes: 200,
          txPackets: 2,
          txErrors: 0,
          txDropped: 0,
        }],
      },
      containers: [{
        id: "abc",
        name: "app",
        image: "busybox:1",
        startTimeMs: t,
        cgroup: {
          path: "/kubepods/podu/abc",
          sample: {
            timestampMs: t,
            cpuUsageNs: 5e8,
            memoryWorkingSetBytes: 3,
            memoryLimitBytes: Infinity,
            pidsCurrent: 4,
            pidsMax: Infinity,
          },
        },
      }],
    }],
  };
  const text = renderCadvisorMetrics(snap);
  assert.ok(text.includes(
    `container_cpu_usage_seconds_total{container="app",cpu="total",id="/kubepods/podu/abc",image="busybox:1",name="abc",namespace="ns",pod="web"} 0.5 ${t}\n`,
  ));
  assert.ok(text.includes(
    `container_cpu_usage_seconds_total{container="",cpu="total",id="/",image="",name="",namespace="",pod=""} 3 ${t}\n`,
  ));
  assert.ok(text.includes(
    `container_network_receive_bytes_total{container="",id="/kubepods/podu",image="",interface="eth0",name="",namespace="ns",pod="web"} 100 ${t}\n`,
  ));
  assert.ok(text.includes(
    'container_spec_memory_limit_bytes{container="app",id="/kubepods/podu/abc",image="busybox:1",name="abc",namespace="ns",pod="web"} 0\n',
  ));
  assert.ok(text.includes(
    `container_threads{container="app",id="/kubepods/podu/abc",image="busybox:1",name="abc",namespace="ns",pod="web"} 4 ${t}\n`,
  ));
  // runc reports an unlimited pids.max as 0, and so does cAdvisor.
  assert.ok(text.includes(
    `container_threads_max{container="app",id="/kubepods/podu/abc",image="busybox:1",name="abc",namespace="ns",pod="web"} 0 ${t}\n`,
  ));
  assert.ok(text.includes('machine_cpu_cores{boot_id="b",machine_id="m",system_uuid=""} 2\n'));
  assert.equal(text.match(/^# TYPE container_cpu_usage_seconds_total /gm)?.length, 1);
  // The kubelet system container shares the root cgroup: written once.
  assert.equal(
    text.match(/container_cpu_usage_seconds_total\{container="",cpu="total",id="\/"/g)?.length,
    1,
  );
});
