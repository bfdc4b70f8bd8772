/**
 * The test kit's own rules: how waitFor() ends, and what its failures say; the
 * fake-clock drivers' limits; the fixtures' defaults; reading Prometheus text.
 */

import assert from "node:assert/strict";
import { FakeClock } from "../../lib/util/clock.ts";
import {
  applyStrategicMergePatch,
  drive,
  fakePodRuntime,
  flushUntil,
  freePort,
  hostNetworkPod,
  runtimeContainer,
  runtimePodStatus,
  sampleSum,
  sampleValue,
  testPod,
  waitFor,
  WaitTimeoutError,
} from "../kit/mod.ts";

// A deadline of 0 ms: a failing wait fails within a millisecond or two of real time.
const NOW = { timeoutMs: 0, intervalMs: 0 };

Deno.test("waitFor() returns the first answer that is neither undefined nor false", async () => {
  const answers = [undefined, false, 0, 7];
  const got = await waitFor("a number", () => answers.shift(), { intervalMs: 0 });
  assert.equal(got, 0);
  assert.deepEqual(answers, [7]);
});

Deno.test("waitFor() retries a check that throws", async () => {
  let polls = 0;
  const got = await waitFor("the daemon", () => {
    if (++polls < 3) throw new Error("connection refused");
    return "up";
  }, { intervalMs: 0 });
  assert.equal(got, "up");
  assert.equal(polls, 3);
});

Deno.test("waitFor() names what it awaited and the last error when it times out", async () => {
  let polls = 0;
  const err = await waitFor("the daemon", () => {
    polls++;
    throw new Error(`refused #${polls}`);
  }, NOW).catch((e) => e);
  assert.ok(err instanceof WaitTimeoutError);
  assert.match(err.message, /^waiting for the daemon: timed out after \d+ ms \(\d+ polls?\)/);
  assert.match(err.message, new RegExp(`poll threw: refused #${polls}$`));
});

Deno.test("waitFor() with until shows the last observation, and the tail of the log", async () => {
  const err = await waitFor("phase Running", () => ({ phase: "Pending" }), {
    ...NOW,
    until: (p) => p.phase === "Running",
    log: () => Array.from({ length: 100 }, (_, i) => `line ${i}`).join("\n"),
  }).catch((e) => e);
  assert.ok(err instanceof WaitTimeoutError);
  assert.match(err.message, /last observed: \{"phase":"Pending"\}/);
  assert.match(err.message, /--- log \(last 60 lines\) ---\nline 40\n/);
  assert.doesNotMatch(err.message, /line 39\n/);
  assert.match(err.message, /line 99$/);
});

Deno.test("waitFor() fails at once when giveUp gives a reason", async () => {
  let polls = 0;
  const err = await waitFor("etcd ready", () => (polls++, false), {
    timeoutMs: 60_000,
    giveUp: () => "exited",
  }).catch((e) => e);
  assert.ok(err instanceof WaitTimeoutError);
  assert.equal(err.message, "waiting for etcd ready: exited; last observed: false");
  assert.equal(polls, 1);
});

Deno.test("drive() fails instead of hanging when the promise outlives its steps", async () => {
  const clock = new FakeClock();
  await assert.rejects(
    drive(clock, new Promise(() => {}), { step: 10, maxSteps: 3 }),
    /still pending after 3 steps of 10 fake ms/,
  );
  assert.equal(await drive(clock, clock.sleep(250).then(() => "slept")), "slept");
});

Deno.test("flushUntil() names what never happened", async () => {
  await assert.rejects(flushUntil("the watch", () => false, 5), /^Error: the watch: still not/);
  let n = 0;
  await flushUntil("three turns", () => ++n >= 3);
});

Deno.test("testPod() and runtimePodStatus() fill a default pod that overrides change", () => {
  const pod = testPod({
    containers: ["a", { name: "b", image: "img-b" }],
    spec: { hostNetwork: true },
  });
  assert.deepEqual(pod, {
    metadata: { name: "web", namespace: "default", uid: "u1" },
    spec: {
      containers: [{ name: "a", image: "busybox" }, { name: "b", image: "img-b" }],
      hostNetwork: true,
    },
  });
  const status = runtimePodStatus({ containers: [runtimeContainer(pod.spec.containers[0]!)] });
  assert.equal(status.sandboxes[0]?.id, status.containers[0]?.sandboxId);
  assert.equal(status.containers[0]?.id, "a-id");
});

Deno.test("hostNetworkPod() runs every container on the local image, init containers too", () => {
  const a = hostNetworkPod("busybox:test", {
    containers: ["app", { name: "pulled", image: "other", imagePullPolicy: "Always" }],
    spec: { initContainers: [{ name: "setup" }], terminationGracePeriodSeconds: 4 },
  });
  const b = hostNetworkPod("busybox:test");
  assert.notEqual(a.metadata.uid, b.metadata.uid);
  assert.equal(a.spec.hostNetwork, true);
  assert.equal(a.spec.terminationGracePeriodSeconds, 4);
  assert.equal(b.spec.terminationGracePeriodSeconds, 1);
  assert.deepEqual(
    [...a.spec.initContainers!, ...a.spec.containers].map((
      c,
    ) => [c.name, c.image, c.imagePullPolicy]),
    [
      ["setup", "busybox:test", "Never"],
      ["app", "busybox:test", "Never"],
      ["pulled", "other", "Always"],
    ],
  );
});

Deno.test("fakePodRuntime() hands out copies and rejects pods it does not hold (or answers an empty status)", async () => {
  const rt = fakePodRuntime();
  rt.pods.set("u1", runtimePodStatus());
  const copy = await rt.getPodStatus("u1");
  copy.name = "changed";
  assert.equal(rt.pods.get("u1")?.name, "web");
  await assert.rejects(rt.getPodStatus("u2"), /pod u2 not found/);
  assert.deepEqual(rt.statusCalls, ["u1", "u2"]);
  const pods = new Map([["u1", runtimePodStatus()]]);
  const lenient = fakePodRuntime({ pods, unknownPod: "empty" });
  assert.equal(lenient.pods, pods);
  assert.deepEqual(await lenient.getPodStatus("u2"), {
    uid: "u2",
    name: "",
    namespace: "",
    sandboxes: [],
    containers: [],
  });
});

Deno.test("sampleValue() reads the sample whose labels include the ones asked for", () => {
  const text = [
    "# TYPE prober_probe_total counter",
    'prober_probe_total{container="a",probe_type="Startup",result="failed"} 3',
    'prober_probe_total{container="a",probe_type="Readiness",result="failed"} 0',
    'prober_probe_total{container="b",probe_type="Startup",result="failed"} 9',
    "up 1",
  ].join("\n");
  const startup = { container: "a", probe_type: "Startup", result: "failed" };
  assert.equal(sampleValue(text, "prober_probe_total", startup), 3);
  assert.equal(sampleValue(text, "prober_probe_total", { ...startup, probe_type: "Readiness" }), 0);
  assert.equal(sampleValue(text, "prober_probe_total", { container: "c" }), undefined);
  assert.equal(sampleValue(text, "up"), 1);
  assert.equal(sampleValue(text, "prober_probe"), undefined);
});

Deno.test("sampleSum() adds every sample whose labels include the ones asked for", () => {
  const text = [
    'apiserver_request_total{code="201",resource="tokenreviews",verb="POST"} 4',
    'apiserver_request_total{code="500",resource="tokenreviews",verb="POST"} 1',
    'apiserver_request_total{code="201",resource="subjectaccessreviews",verb="POST"} 16',
  ].join("\n");
  const total = (labels: Record<string, string>) =>
    sampleSum(text, "apiserver_request_total", labels);
  assert.equal(total({ resource: "tokenreviews" }), 5);
  assert.equal(total({ resource: "subjectaccessreviews" }), 16);
  assert.equal(total({ resource: "pods" }), 0);
});

Deno.test("applyStrategicMergePatch() merges keyed lists, deletes, orders and replaces as the apiserver", () => {
  const stored = {
    status: {
      phase: "Pending",
      message: "old",
      conditions: [{ type: "A", status: "False" }, { type: "B", status: "True" }],
      podIPs: [{ ip: "10.0.0.1" }],
      hostIPs: [{ ip: "192.0.2.1" }],
    },
  };
  const patched = applyStrategicMergePatch(stored, {
    status: {
      phase: "Running",
      message: null,
      "$setElementOrder/conditions": [{ type: "C" }, { type: "A" }],
      conditions: [{ type: "A", status: "True" }, { type: "C", status: "True" }],
      podIPs: [{ ip: "10.0.0.1", $patch: "delete" }],
      hostIPs: [{ $patch: "replace" }, { ip: "192.0.2.2" }],
    },
  }, { conditions: "type", podIPs: "ip" });
  assert.deepEqual(patched, {
    status: {
      phase: "Running",
      conditions: [
        { type: "C", status: "True" },
        { type: "A", status: "True" },
        { type: "B", status: "True" },
      ],
      podIPs: [],
      hostIPs: [{ ip: "192.0.2.2" }],
    },
  });
  assert.equal(stored.status.phase, "Pending", "the stored object is not modified");
});

Deno.test("freePort() never hands out one port twice in a process (an agent's ports would collide)", () => {
  const ports = Array.from({ length: 300 }, () => freePort());
  assert.equal(new Set(ports).size, ports.length);
});
