import assert from "node:assert/strict";
import type { RuntimeService } from "../../lib/cri/types.ts";
import {
  exponentialBuckets,
  instrumentRuntime,
  KubeletMetrics,
  Registry,
  RUNTIME_OPERATION_BUCKETS,
} from "../../lib/metrics/mod.ts";

const process = { rssBytes: () => 1000, cpuSeconds: () => 1.5, startTimeSeconds: 1700000000 };

Deno.test("Histogram.collect() writes cumulative buckets, +Inf, sum and count", () => {
  const r = new Registry();
  const h = r.histogram({ name: "x_seconds", help: "X.", buckets: [0.1, 1], labelNames: ["op"] });
  h.observe(0.05, "a");
  h.observe(0.5, "a");
  h.observe(3, "a");
  const f = r.collect()[0]!;
  assert.deepEqual(
    f.samples.map((s) => [s.suffix, s.labels?.le ?? "", s.value]),
    [["_bucket", "0.1", 1], ["_bucket", "1", 2], ["_bucket", "+Inf", 3], ["_sum", "", 3.55], [
      "_count",
      "",
      3,
    ]],
  );
  assert.throws(() => h.observe(1), /expected 1 label values/);
});

Deno.test("exponentialBuckets() matches client_golang for the runtime operation buckets", () => {
  assert.equal(RUNTIME_OPERATION_BUCKETS.length, 14);
  assert.equal(RUNTIME_OPERATION_BUCKETS[0], 0.005);
  assert.equal(RUNTIME_OPERATION_BUCKETS[1], 0.0125);
  assert.deepEqual(exponentialBuckets(1, 2, 3), [1, 2, 4]);
  assert.throws(() => exponentialBuckets(0, 2, 3), RangeError);
});

Deno.test("KubeletMetrics.render() uses upstream names, help prefixes and buckets", () => {
  const m = new KubeletMetrics({ process });
  m.observePodStart(2500);
  m.observePlegRelist(10, 1_000);
  m.observePlegRelist(20, 2_010);
  m.observePodWorker("sync", 30);
  m.setRunning(2, { running: 3, exited: 1 });
  const text = m.render();
  assert.match(
    text,
    /^# HELP kubelet_pod_start_sli_duration_seconds \[ALPHA\] Duration in seconds to start a pod/m,
  );
  assert.match(text, /^kubelet_pod_start_sli_duration_seconds_bucket\{le="2"\} 0$/m);
  assert.match(text, /^kubelet_pod_start_sli_duration_seconds_bucket\{le="3"\} 1$/m);
  assert.match(text, /^kubelet_pod_start_sli_duration_seconds_bucket\{le="3600"\} 1$/m);
  assert.match(text, /^kubelet_pleg_relist_interval_seconds_count 1$/m);
  assert.match(text, /^kubelet_pleg_relist_interval_seconds_sum 1$/m); // 1.990 − 0.990
  assert.match(text, /^kubelet_pod_worker_duration_seconds_count\{operation_type="sync"\} 1$/m);
  assert.match(text, /^kubelet_running_pods 2$/m);
  assert.match(text, /^kubelet_running_containers\{container_state="running"\} 3$/m);
  assert.match(text, /^process_resident_memory_bytes 1000$/m);
  assert.match(text, /^process_cpu_seconds_total 1.5$/m);
  assert.match(text, /^process_start_time_seconds 1.7e\+09$/m);
});

Deno.test("KubeletMetrics counts images removed by image GC by reason", () => {
  const m = new KubeletMetrics({ process });
  assert.doesNotMatch(m.render(), /^kubelet_image_garbage_collected_total\{/m);
  m.observeImageGarbageCollected("space");
  m.observeImageGarbageCollected("space");
  m.observeImageGarbageCollected("age");
  const text = m.render();
  assert.match(
    text,
    /^# HELP kubelet_image_garbage_collected_total \[ALPHA\] Total number of images garbage collected/m,
  );
  assert.match(text, /^kubelet_image_garbage_collected_total\{reason="space"\} 2$/m);
  assert.match(text, /^kubelet_image_garbage_collected_total\{reason="age"\} 1$/m);
});

Deno.test("KubeletMetrics counts lifecycle hooks that fell back to HTTP, from 0 as upstream", () => {
  const m = new KubeletMetrics({ process });
  assert.match(m.render(), /^kubelet_lifecycle_handler_http_fallbacks_total 0$/m);
  m.countHookHttpFallback();
  const text = m.render();
  assert.match(
    text,
    /^# HELP kubelet_lifecycle_handler_http_fallbacks_total \[ALPHA\] The number of times lifecycle handlers successfully fell back to http from https\.$/m,
  );
  assert.match(text, /^# TYPE kubelet_lifecycle_handler_http_fallbacks_total counter$/m);
  assert.match(text, /^kubelet_lifecycle_handler_http_fallbacks_total 1$/m);
});

Deno.test("KubeletMetrics writes client-go's rest_client request and rate limiter metrics", () => {
  const m = new KubeletMetrics({ process });
  m.observeRestClientRateLimiter("PATCH", "127.0.0.1:6443", 300);
  m.observeRestClientResult("200", "PATCH", "127.0.0.1:6443");
  m.observeRestClientResult("200", "PATCH", "127.0.0.1:6443");
  m.observeRestClientResult("<error>", "GET", "127.0.0.1:6443");
  const text = m.render();
  assert.match(
    text,
    /^# HELP rest_client_requests_total \[ALPHA\] Number of HTTP requests, partitioned by status code, method, and host\.$/m,
  );
  const lines = text.split("\n");
  for (
    const line of [
      'rest_client_requests_total{code="200",host="127.0.0.1:6443",method="PATCH"} 2',
      'rest_client_requests_total{code="<error>",host="127.0.0.1:6443",method="GET"} 1',
      'rest_client_rate_limiter_duration_seconds_bucket{host="127.0.0.1:6443",le="0.25",verb="PATCH"} 0',
      'rest_client_rate_limiter_duration_seconds_bucket{host="127.0.0.1:6443",le="0.5",verb="PATCH"} 1',
      'rest_client_rate_limiter_duration_seconds_bucket{host="127.0.0.1:6443",le="60",verb="PATCH"} 1',
    ]
  ) assert.ok(lines.includes(line), `missing: ${line}`);
});

Deno.test("instrumentRuntime() counts and times each call and counts errors by operation", async () => {
  const m = new KubeletMetrics({ process });
  const inner = {
    version: () =>
      Promise.resolve({
        version: "0.1.0",
        runtimeName: "c",
        runtimeVersion: "1",
        runtimeApiVersion: "v1",
      }),
    runPodSandbox: () => Promise.reject(new Error("boom")),
    close: () => {},
  } as unknown as RuntimeService;
  let t = 0;
  const rt = instrumentRuntime(inner, m, () => (t += 5));
  assert.equal((await rt.version()).runtimeName, "c");
  await assert.rejects(
    rt.runPodSandbox({ metadata: { name: "p", uid: "u", namespace: "n", attempt: 0 } }),
    /boom/,
  );
  assert.equal(m.runtimeOperations.value("version"), 1);
  assert.equal(m.runtimeOperations.value("run_podsandbox"), 1);
  assert.equal(m.runtimeOperationErrors.value("run_podsandbox"), 1);
  assert.equal(m.runtimeOperationErrors.value("version"), 0);
  assert.deepEqual(m.runtimeOperationDuration.snapshot("version"), { count: 1, sum: 0.005 });
});
