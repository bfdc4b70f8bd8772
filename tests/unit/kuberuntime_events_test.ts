import assert from "node:assert/strict";
import type { Pod } from "../../lib/api/types.ts";
import type { ObjectReference } from "../../lib/api/cluster_types.ts";
import type { EventRecorder, EventType } from "../../lib/events/types.ts";
import { recordBackOffEvent, recordStepEvent } from "../../lib/kuberuntime/_events.ts";

interface Recorded {
  ref: ObjectReference;
  type: EventType;
  reason: string;
  message: string;
}

function recorder(): EventRecorder & { got: Recorded[] } {
  const got: Recorded[] = [];
  return { got, event: (ref, type, reason, message) => got.push({ ref, type, reason, message }) };
}

const pod: Pod = {
  metadata: { name: "web", namespace: "ns", uid: "u1" },
  spec: {
    initContainers: [{ name: "setup", image: "busybox" }],
    containers: [{ name: "main", image: "busybox" }],
  },
};

Deno.test("recordStepEvent() records Created and Started for a started container", () => {
  const ev = recorder();
  recordStepEvent(ev, pod, { action: "StartContainer", target: "main" });
  assert.deepEqual(ev.got.map((e) => [e.type, e.reason, e.message]), [
    ["Normal", "Created", "Created container main"],
    ["Normal", "Started", "Started container main"],
  ]);
  assert.equal(ev.got[0]!.ref.fieldPath, "spec.containers{main}");
  assert.equal(ev.got[0]!.ref.uid, "u1");
});

Deno.test("recordStepEvent() points init container events at spec.initContainers", () => {
  const ev = recorder();
  recordStepEvent(ev, pod, { action: "StartContainer", target: "setup" });
  assert.equal(ev.got[0]!.reason, "Created");
  assert.equal(ev.got[0]!.ref.fieldPath, "spec.initContainers{setup}");
});

Deno.test("recordStepEvent() records nothing for a KillContainer step: Killing comes as the kill begins", () => {
  const ev = recorder();
  recordStepEvent(ev, pod, { action: "KillContainer", target: "main" });
  assert.deepEqual(ev.got, []);
});

Deno.test("recordStepEvent() records Failed for config errors but leaves image errors to the image manager", () => {
  const ev = recorder();
  recordStepEvent(ev, pod, {
    action: "StartContainer",
    target: "main",
    error: { reason: "CreateContainerConfigError", message: 'configmap "x" not found' },
  });
  recordStepEvent(ev, pod, {
    action: "StartContainer",
    target: "main",
    error: { reason: "ErrImagePull", message: "pull failed" },
  });
  assert.deepEqual(ev.got.map((e) => [e.type, e.reason, e.message]), [
    ["Warning", "Failed", 'Error: configmap "x" not found'],
  ]);
});

Deno.test("recordStepEvent() records FailedMount and FailedCreatePodSandBox on the pod", () => {
  const ev = recorder();
  recordStepEvent(ev, pod, {
    action: "MountVolume",
    target: "ns/web",
    error: { reason: "FailedMount", message: "MountVolume.SetUp failed" },
  });
  recordStepEvent(ev, pod, {
    action: "CreatePodSandbox",
    target: "ns/web",
    error: { reason: "CreatePodSandboxError", message: "Failed to create pod sandbox: boom" },
  });
  assert.deepEqual(ev.got.map((e) => [e.reason, e.ref.fieldPath]), [
    ["FailedMount", undefined],
    ["FailedCreatePodSandBox", undefined],
  ]);
});

Deno.test("recordStepEvent() records nothing for successful mounts or sandboxes", () => {
  const ev = recorder();
  recordStepEvent(ev, pod, { action: "MountVolume", target: "ns/web" });
  recordStepEvent(ev, pod, { action: "CreatePodSandbox", target: "abc" });
  assert.equal(ev.got.length, 0);
});

Deno.test("recordBackOffEvent() uses upstream's CrashLoopBackOff message", () => {
  const ev = recorder();
  recordBackOffEvent(ev, pod, "main");
  assert.equal(ev.got[0]!.type, "Warning");
  assert.equal(ev.got[0]!.reason, "BackOff");
  assert.equal(ev.got[0]!.message, "Back-off restarting failed container main in pod web_ns(u1)");
});
