import assert from "node:assert/strict";
import type { Pod } from "../../lib/api/types.ts";
import { PodConfig } from "../../lib/config/mux.ts";
import type { PodUpdate } from "../../lib/config/types.ts";
import { FakeClock } from "../../lib/util/clock.ts";
import { createLogger } from "../../lib/util/log.ts";
import { testPod } from "../kit/mod.ts";

function pod(name: string, uid: string, image = "busybox"): Pod {
  return testPod({ name, uid, containers: [{ name: "c", image }], metadata: { annotations: {} } });
}

function summary(updates: PodUpdate[]): string[] {
  return updates.map((u) => `${u.source} ${u.op} ${u.pods.map((p) => p.metadata.uid).join(",")}`);
}

function newConfig(lines: string[] = []) {
  const clock = new FakeClock();
  const log = createLogger({ format: "json", write: (l) => lines.push(l) });
  return { clock, config: new PodConfig({ clock, log }) };
}

Deno.test("PodConfig.set() emits ADD for new pods and stamps the source and first-seen time", () => {
  const { config } = newConfig();
  const updates = config.set("file", [pod("a", "u1"), pod("b", "u2")]);
  assert.deepEqual(summary(updates), ["file ADD u1,u2"]);
  const a = updates[0]!.pods[0]!.metadata.annotations!;
  assert.equal(a["kubernetes.io/config.source"], "file");
  assert.equal(a["kubernetes.io/config.seen"], "2026-01-01T00:00:00.000Z");
});

Deno.test("PodConfig.set() emits nothing when a source resends the same set", () => {
  const { config } = newConfig();
  config.set("file", [pod("a", "u1")]);
  assert.deepEqual(config.set("file", [pod("a", "u1")]), []);
});

Deno.test("PodConfig.set() emits an empty ADD the first time a source reports nothing", () => {
  const { config } = newConfig();
  assert.deepEqual(summary(config.set("http", [])), ["http ADD "]);
  assert.deepEqual(config.set("http", []), []);
});

Deno.test("PodConfig.set() emits UPDATE when the spec changes for the same UID", () => {
  const { config, clock } = newConfig();
  config.set("file", [pod("a", "u1")]);
  clock.tick(5000);
  const updates = config.set("file", [pod("a", "u1", "busybox:2")]);
  assert.deepEqual(summary(updates), ["file UPDATE u1"]);
  const updated = updates[0]!.pods[0]!;
  assert.equal(updated.spec.containers[0]!.image, "busybox:2");
  // The first-seen time is the kubelet's own and survives the update.
  assert.equal(
    updated.metadata.annotations!["kubernetes.io/config.seen"],
    "2026-01-01T00:00:00.000Z",
  );
});

Deno.test("PodConfig.set() emits UPDATE when only spec.ephemeralContainers changed (kubectl debug)", () => {
  const { config } = newConfig();
  config.set("api", [pod("a", "u1")]);
  const debugged = pod("a", "u1");
  debugged.spec.ephemeralContainers = [{ name: "dbg", image: "busybox", targetContainerName: "c" }];
  const updates = config.set("api", [debugged]);
  assert.deepEqual(summary(updates), ["api UPDATE u1"]);
  assert.equal(updates[0]!.pods[0]!.spec.ephemeralContainers?.[0]?.targetContainerName, "c");
});

Deno.test("PodConfig.set() emits UPDATE for label and annotation changes but not for local annotations", () => {
  const { config } = newConfig();
  config.set("file", [pod("a", "u1")]);
  const seenOnly = pod("a", "u1");
  seenOnly.metadata.annotations = { "kubernetes.io/config.seen": "later" };
  assert.deepEqual(config.set("file", [seenOnly]), []);
  const labelled = pod("a", "u1");
  labelled.metadata.labels = { tier: "web" };
  assert.deepEqual(summary(config.set("file", [labelled])), ["file UPDATE u1"]);
  const annotated = pod("a", "u1");
  annotated.metadata.labels = { tier: "web" };
  annotated.metadata.annotations = { owner: "ops" };
  assert.deepEqual(summary(config.set("file", [annotated])), ["file UPDATE u1"]);
});

Deno.test("PodConfig.set() emits RECONCILE when only the status changed", () => {
  const { config } = newConfig();
  config.set("api", [pod("a", "u1")]);
  const withStatus = pod("a", "u1");
  withStatus.status = { phase: "Running" };
  const updates = config.set("api", [withStatus]);
  assert.deepEqual(summary(updates), ["api RECONCILE u1"]);
  assert.equal(updates[0]!.pods[0]!.status?.phase, "Running");
});

Deno.test("PodConfig.set() emits DELETE when a deletion timestamp appears", () => {
  const { config } = newConfig();
  config.set("api", [pod("a", "u1")]);
  const deleting = pod("a", "u1");
  deleting.metadata.deletionTimestamp = "2026-01-01T00:01:00Z";
  deleting.metadata.deletionGracePeriodSeconds = 30;
  assert.deepEqual(summary(config.set("api", [deleting])), ["api DELETE u1"]);
});

Deno.test("PodConfig.set() emits REMOVE for pods gone from their source, before ADD", () => {
  const { config } = newConfig();
  config.set("file", [pod("a", "u1"), pod("b", "u2")]);
  // An edited manifest: same name, new UID. The old pod goes before the new one comes.
  const updates = config.set("file", [pod("a", "u3", "busybox:2"), pod("b", "u2")]);
  assert.deepEqual(summary(updates), ["file REMOVE u1", "file ADD u3"]);
});

Deno.test("PodConfig.set() only touches the source that reported", () => {
  const { config } = newConfig();
  config.set("file", [pod("a", "u1")]);
  config.set("http", [pod("b", "u2")]);
  assert.deepEqual(summary(config.set("http", [])), ["http REMOVE u2"]);
  assert.deepEqual(config.mergedState().map((p) => p.metadata.uid), ["u1"]);
});

Deno.test("PodConfig.set() drops a UID another source already owns and warns", () => {
  const lines: string[] = [];
  const { config } = newConfig(lines);
  config.set("file", [pod("a", "u1")]);
  assert.deepEqual(summary(config.set("http", [pod("x", "u1"), pod("y", "u2")])), ["http ADD u2"]);
  assert.ok(lines.some((l) => l.includes("another source") && l.includes('"owner":"file"')));
  // Once the first source lets go, the other's pod comes through.
  config.set("file", []);
  assert.deepEqual(summary(config.set("http", [pod("x", "u1"), pod("y", "u2")])), ["http ADD u1"]);
});

Deno.test("PodConfig.set() drops a second pod with the same name in one source", () => {
  const lines: string[] = [];
  const { config } = newConfig(lines);
  assert.deepEqual(summary(config.set("file", [pod("a", "u1"), pod("a", "u2")])), ["file ADD u1"]);
  assert.ok(lines.some((l) => l.includes("duplicate pod name")));
});

Deno.test("PodConfig.set() copies pods in and out", () => {
  const { config } = newConfig();
  const input = pod("a", "u1");
  const [added] = config.set("file", [input]);
  input.spec.containers[0]!.image = "mutated";
  added!.pods[0]!.spec.containers[0]!.image = "mutated too";
  assert.equal(config.mergedState()[0]!.spec.containers[0]!.image, "busybox");
  assert.equal(input.metadata.annotations!["kubernetes.io/config.source"], undefined);
});

Deno.test("PodConfig.seenAllSources() waits for every registered source", () => {
  const { config } = newConfig();
  const file = config.channel("file");
  const http = config.channel("http");
  assert.equal(config.seenAllSources(), false);
  file([]);
  assert.equal(config.seenAllSources(), false);
  assert.equal(config.seenSources("file"), true);
  http([pod("a", "u1")]);
  assert.equal(config.seenAllSources(), true);
  assert.deepEqual(config.sources(), ["file", "http"]);
});

Deno.test("PodConfig.updates() streams updates in order until closed", async () => {
  const { config } = newConfig();
  const sink = config.channel("file");
  sink([pod("a", "u1")]);
  sink([pod("b", "u2")]);
  config.close();
  const seen: PodUpdate[] = [];
  for await (const u of config.updates()) seen.push(u);
  assert.deepEqual(summary(seen), ["file ADD u1", "file REMOVE u1", "file ADD u2"]);
});

Deno.test("PodConfig with onUpdate delivers synchronously instead of queueing", () => {
  const got: PodUpdate[] = [];
  const config = new PodConfig({ clock: new FakeClock(), onUpdate: (u) => got.push(u) });
  config.set("file", [pod("a", "u1")]);
  assert.deepEqual(summary(got), ["file ADD u1"]);
});

Deno.test("PodConfig.set() ignores a pod without metadata or UID instead of throwing", () => {
  const { config } = newConfig();
  const broken = { spec: { containers: [] } } as unknown as Pod;
  assert.deepEqual(summary(config.set("file", [broken, pod("a", "")])), ["file ADD "]);
});

Deno.test("PodConfig.set() takes an API pod at the resourceVersion it holds as unchanged, and only an API pod", () => {
  const { config } = newConfig();
  const at = (rv: string, image: string, phase?: "Running"): Pod => {
    const p = pod("a", "u1", image);
    p.metadata.resourceVersion = rv;
    if (phase) p.status = { phase };
    return p;
  };
  config.set("api", [at("1", "busybox")]);
  // The apiserver never sends a changed object at the same version: the mux does not look.
  assert.deepEqual(config.set("api", [at("1", "nginx")]), []);
  assert.deepEqual(summary(config.set("api", [at("2", "busybox", "Running")])), [
    "api RECONCILE u1",
  ]);
  assert.deepEqual(config.set("api", [at("2", "nginx", "Running")]), []);
  assert.deepEqual(summary(config.set("api", [at("3", "nginx", "Running")])), ["api UPDATE u1"]);
  // A file's resourceVersion means nothing: its pods are always compared.
  config.set("file", [{
    ...at("7", "busybox"),
    metadata: { ...at("7", "busybox").metadata, uid: "f1" },
  }]);
  const edited = at("7", "nginx");
  edited.metadata.uid = "f1";
  assert.deepEqual(summary(config.set("file", [edited])), ["file UPDATE f1"]);
});
