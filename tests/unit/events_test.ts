import assert from "node:assert/strict";
import type { Event } from "../../lib/api/cluster_types.ts";
import {
  ApiError,
  type DeleteOptions,
  type KubeClient,
  type ObjectList,
  type PatchType,
} from "../../lib/kubeapi/types.ts";
import {
  ApiEventRecorder,
  EventMessage,
  EventReason,
  LogEventRecorder,
  nodeReference,
  podReference,
} from "../../lib/events/mod.ts";
import { FakeClock } from "../../lib/util/clock.ts";
import { formatDuration } from "../../lib/util/duration.ts";
import { createLogger, silentLogger } from "../../lib/util/log.ts";
import { flushUntil } from "../kit/mod.ts";

interface Call {
  method: string;
  path: string;
  body: unknown;
}

/** An events endpoint in memory, with an outage switch and a hang switch. */
class FakeEvents implements KubeClient {
  calls: Call[] = [];
  events = new Map<string, Event>();
  failuresLeft = 0;
  reject: ApiError | undefined;
  hang = false;
  #rv = 1;

  #enter(method: string, path: string, body: unknown): Promise<void> {
    this.calls.push({ method, path, body });
    if (this.hang) return new Promise(() => {});
    if (this.failuresLeft > 0) {
      this.failuresLeft--;
      return Promise.reject(new Error(`${method} ${path}: connect ECONNREFUSED`));
    }
    if (this.reject) return Promise.reject(this.reject);
    return Promise.resolve();
  }

  async create<T>(path: string, body: unknown): Promise<T> {
    await this.#enter("POST", path, body);
    const e = structuredClone(body) as Event;
    const key = `${path}/${e.metadata.name}`;
    if (this.events.has(key)) throw new ApiError("exists", 409, "AlreadyExists");
    e.metadata.resourceVersion = String(++this.#rv);
    this.events.set(key, e);
    return structuredClone(e) as T;
  }
  async patch<T>(path: string, body: unknown, type: PatchType): Promise<T> {
    await this.#enter("PATCH", path, body);
    assert.equal(type, "strategic");
    const e = this.events.get(path);
    if (!e) throw new ApiError("not found", 404, "NotFound");
    Object.assign(e, body);
    e.metadata.resourceVersion = String(++this.#rv);
    return structuredClone(e) as T;
  }
  get<T>(): Promise<T> {
    return Promise.reject(new Error("not used"));
  }
  list<T>(): Promise<ObjectList<T>> {
    return Promise.reject(new Error("not used"));
  }
  update<T>(): Promise<T> {
    return Promise.reject(new Error("not used"));
  }
  delete(_p: string, _b?: DeleteOptions): Promise<void> {
    return Promise.reject(new Error("not used"));
  }
  watch(): Promise<void> {
    return Promise.resolve();
  }
  close(): void {}

  count(method: string): number {
    return this.calls.filter((c) => c.method === method).length;
  }
}

const pod = { metadata: { name: "web", namespace: "ns", uid: "u1" } };

function setup(opts: { queueSize?: number; start?: boolean } = {}) {
  const clock = new FakeClock();
  const client = new FakeEvents();
  const recorder = new ApiEventRecorder({
    client,
    clock,
    logger: silentLogger,
    host: "node1",
    ...(opts.queueSize !== undefined ? { queueSize: opts.queueSize } : {}),
  });
  if (opts.start !== false) recorder.start();
  return { clock, client, recorder };
}

Deno.test("ApiEventRecorder.event() returns at once even when the apiserver hangs", async () => {
  const { client, recorder } = setup();
  client.hang = true;
  const before = performance.now();
  for (let i = 0; i < 5; i++) {
    const r: unknown = recorder.event(podReference(pod), "Normal", "Test", `m${i}`);
    assert.equal(r, undefined, "event() returns nothing to await");
  }
  assert.ok(performance.now() - before < 1000);
  await Promise.resolve();
  assert.equal(client.calls.length, 1, "one request in flight, the rest queued");
  assert.equal(recorder.pending, 4);
});

Deno.test("ApiEventRecorder posts an identical event once, then patches its count", async () => {
  const { client, clock, recorder } = setup();
  const ref = podReference(pod, { name: "app" });
  recorder.event(ref, "Normal", EventReason.pulling, EventMessage.pulling("busybox"));
  await recorder.flush();
  clock.tick(3_000);
  recorder.event(ref, "Normal", EventReason.pulling, EventMessage.pulling("busybox"));
  await recorder.flush();
  assert.equal(client.count("POST"), 1);
  assert.equal(client.count("PATCH"), 1);
  const post = client.calls[0]!;
  const created = post.body as Event;
  const patch = client.calls[1]!;
  assert.equal(patch.path, `/api/v1/namespaces/ns/events/${created.metadata.name}`);
  assert.deepEqual(patch.body, {
    count: 2,
    lastTimestamp: "2026-01-01T00:00:03Z",
    message: 'Pulling image "busybox"',
  });
  const stored = [...client.events.values()][0]!;
  assert.equal(stored.count, 2);
  assert.equal(stored.firstTimestamp, "2026-01-01T00:00:00Z");
  assert.equal(stored.involvedObject.fieldPath, "spec.containers{app}");
});

Deno.test("ApiEventRecorder writes node events to the default namespace with upstream's fields", async () => {
  const { client, clock, recorder } = setup();
  recorder.event(nodeReference("node1"), "Normal", EventReason.starting, EventMessage.starting());
  await recorder.flush();
  const call = client.calls[0]!;
  assert.equal(call.method, "POST");
  assert.equal(call.path, "/api/v1/namespaces/default/events");
  const nanos = (BigInt(clock.now()) * 1_000_000n).toString(16);
  assert.deepEqual(call.body, {
    apiVersion: "v1",
    kind: "Event",
    metadata: { name: `node1.${nanos}`, namespace: "default" },
    involvedObject: { kind: "Node", name: "node1", uid: "node1" },
    reason: "Starting",
    message: "Starting kubelet.",
    source: { component: "kubelet", host: "node1" },
    firstTimestamp: "2026-01-01T00:00:00Z",
    lastTimestamp: "2026-01-01T00:00:00Z",
    count: 1,
    type: "Normal",
    reportingComponent: "kubelet",
    reportingInstance: "node1",
  });
});

Deno.test("ApiEventRecorder.event() drops events when the queue is full", async () => {
  const { client, recorder } = setup({ queueSize: 3, start: false });
  for (let i = 0; i < 5; i++) recorder.event(podReference(pod), "Normal", `R${i}`, "m");
  assert.equal(recorder.dropped, 2);
  assert.equal(recorder.pending, 3);
  recorder.start();
  await recorder.flush();
  assert.deepEqual(
    client.calls.map((c) => (c.body as Event).reason),
    ["R0", "R1", "R2"],
  );
});

Deno.test("ApiEventRecorder spam filter allows 25 events per object, then one per 5 minutes", async () => {
  const { client, clock, recorder } = setup();
  for (let i = 0; i < 30; i++) recorder.event(podReference(pod), "Warning", `R${i}`, "m");
  recorder.event(
    podReference({ metadata: { ...pod.metadata, name: "other" } }),
    "Normal",
    "X",
    "m",
  );
  await recorder.flush();
  assert.equal(client.count("POST"), 26, "25 for web, 1 for other");
  clock.tick(300_000);
  recorder.event(podReference(pod), "Warning", "Late", "m");
  recorder.event(podReference(pod), "Warning", "Later", "m");
  await recorder.flush();
  assert.equal(client.count("POST"), 27, "one token refilled after 5 minutes");
});

Deno.test("ApiEventRecorder combines more than 10 similar events into one", async () => {
  const { client, recorder } = setup();
  for (let i = 0; i < 12; i++) {
    recorder.event(podReference(pod), "Warning", EventReason.failedMount, `volume v${i} failed`);
  }
  await recorder.flush();
  const bodies = client.calls.map((c) => c.body as Record<string, unknown>);
  assert.equal(client.count("POST"), 10);
  assert.equal(bodies[9]!.message, "(combined from similar events): volume v9 failed");
  assert.equal(client.count("PATCH"), 2);
  assert.deepEqual(bodies[11], {
    count: 3,
    lastTimestamp: "2026-01-01T00:00:00Z",
    message: "(combined from similar events): volume v11 failed",
  });
});

Deno.test("ApiEventRecorder retries while the apiserver is unreachable", async () => {
  const { client, clock, recorder } = setup();
  client.failuresLeft = 2;
  recorder.event(podReference(pod), "Normal", EventReason.started, EventMessage.started("app"));
  await flushUntil("the sender waiting to retry", () => clock.pendingTimers > 0, 1000);
  clock.tick(5_000);
  await flushUntil("the sender waiting to retry", () => clock.pendingTimers > 0, 1000);
  clock.tick(5_000);
  await recorder.flush();
  assert.equal(client.count("POST"), 3);
  assert.equal(client.events.size, 1);
});

Deno.test("ApiEventRecorder gives up on an event after its last try", async () => {
  const { client, clock, recorder } = setup();
  client.failuresLeft = 100;
  recorder.event(podReference(pod), "Normal", "A", "m");
  for (let i = 0; i < 3; i++) {
    await flushUntil("the sender waiting to retry", () => clock.pendingTimers > 0, 1000);
    clock.tick(5_000);
  }
  await recorder.flush();
  assert.equal(client.count("POST"), 4, "bounded: 4 tries");
  client.failuresLeft = 0;
  recorder.event(podReference(pod), "Normal", "B", "m");
  await recorder.flush();
  assert.equal(client.events.size, 1, "the next event still goes");
});

Deno.test("ApiEventRecorder does not retry an event the apiserver rejects", async () => {
  const { client, recorder } = setup();
  client.reject = new ApiError("namespace is terminating", 403, "Forbidden");
  recorder.event(podReference(pod), "Normal", "A", "m");
  await recorder.flush();
  assert.equal(client.calls.length, 1);
});

Deno.test("LogEventRecorder.event() logs events at verbosity 2", () => {
  const lines: string[] = [];
  const write = (l: string) => lines.push(l);
  const quiet = new LogEventRecorder(createLogger({ verbosity: 1, write, caller: false }));
  quiet.event(podReference(pod), "Warning", EventReason.backOff, "x");
  assert.equal(lines.length, 0);
  const loud = new LogEventRecorder(
    createLogger({ verbosity: 2, write, caller: false, format: "json" }),
  );
  loud.event(podReference(pod, { name: "app" }), "Warning", EventReason.unhealthy, "boom");
  assert.equal(lines.length, 1);
  const rec = JSON.parse(lines[0]!);
  assert.equal(rec.msg, "Event occurred");
  assert.equal(rec.object, "ns/web");
  assert.equal(rec.fieldPath, "spec.containers{app}");
  assert.equal(rec.reason, "Unhealthy");
  assert.equal(rec.type, "Warning");
  assert.equal(rec.message, "boom");
});

Deno.test("EventMessage formats messages as upstream does", () => {
  assert.equal(formatDuration(1234), "1.234s");
  assert.equal(formatDuration(250), "250ms");
  assert.equal(formatDuration(62_500), "1m2.5s");
  assert.equal(
    EventMessage.pulled("busybox:1.36", 1234, 1500, 2_000_000),
    'Successfully pulled image "busybox:1.36" in 1.234s (1.5s including waiting). Image size: 2000000 bytes.',
  );
  assert.equal(
    EventMessage.backOffRestart("app", { name: "web", namespace: "ns", uid: "u1" }),
    "Back-off restarting failed container app in pod web_ns(u1)",
  );
  assert.equal(
    EventMessage.probeFailed("Liveness", "HTTP probe failed with statuscode: 500"),
    "Liveness probe failed: HTTP probe failed with statuscode: 500",
  );
  assert.equal(
    EventMessage.nodeStatus("n1", EventReason.nodeReady),
    "Node n1 status is now: NodeReady",
  );
  assert.equal(
    EventMessage.mountSetUpFailed("cfg", 'configmap "cfg" not found'),
    'MountVolume.SetUp failed for volume "cfg" : configmap "cfg" not found',
  );
});

Deno.test("podReference() finds init containers in the pod's spec unless told", () => {
  const withSpec = {
    metadata: { name: "web", namespace: "ns", uid: "u1" },
    spec: { initContainers: [{ name: "setup" }], containers: [{ name: "app" }] },
  };
  assert.equal(podReference(withSpec, { name: "setup" }).fieldPath, "spec.initContainers{setup}");
  assert.equal(podReference(withSpec, { name: "app" }).fieldPath, "spec.containers{app}");
  assert.equal(
    podReference(withSpec, { name: "setup", init: false }).fieldPath,
    "spec.containers{setup}",
  );
  assert.equal(
    podReference({ metadata: withSpec.metadata }, { name: "x", init: true }).fieldPath,
    "spec.initContainers{x}",
  );
});

Deno.test("podReference() names the list that declares the container in fieldPath", () => {
  const spec = {
    containers: [{ name: "app" }],
    initContainers: [{ name: "setup" }],
    ephemeralContainers: [{ name: "dbg" }],
  };
  const p = { metadata: { name: "web", namespace: "ns", uid: "u" }, spec };
  assert.equal(podReference(p, { name: "app" }).fieldPath, "spec.containers{app}");
  assert.equal(podReference(p, { name: "setup" }).fieldPath, "spec.initContainers{setup}");
  assert.equal(podReference(p, { name: "dbg" }).fieldPath, "spec.ephemeralContainers{dbg}");
});
