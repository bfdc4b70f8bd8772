/**
 * The fault suite's invariant rules (tests/faults/_invariants.ts) over hand-made
 * observations: each rule finds its violation and stays quiet on a clean node.
 */

import assert from "node:assert/strict";
import type { Pod } from "../../lib/api/types.ts";
import { ContainerState, PodSandboxState } from "../../lib/cri/mod.ts";
import {
  agentRemovalWasCut,
  agentWasRefused,
  type Baseline,
  DEFAULT_BOUNDS,
  type Observation,
  pendingDeletions,
  type RuntimeContainer,
  runtimeView,
  sandboxesHolding,
  violationsOf,
} from "../faults/_invariants.ts";

const NS = "churn";
const UID = "11111111-2222-3333-4444-555555555555";
const GONE = "99999999-2222-3333-4444-555555555555";
const NOW = 1_000_000;

function pod(over: { uid?: string; name?: string; running?: string; ready?: boolean } = {}): Pod {
  const running = over.running ?? "c1";
  return {
    metadata: { name: over.name ?? "web", namespace: NS, uid: over.uid ?? UID },
    spec: { containers: [{ name: "main", image: "busybox" }] },
    status: {
      phase: "Running",
      conditions: [{ type: "Ready", status: over.ready === false ? "False" : "True" }],
      containerStatuses: [{
        name: "main",
        state: { running: { startedAt: "2026-12-02T00:00:00Z" } },
        lastState: {},
        ready: over.ready ?? true,
        restartCount: 0,
        image: "busybox",
        imageID: "",
        containerID: `containerd://${running}`,
      }],
    },
  } as Pod;
}

function container(over: Partial<RuntimeContainer> = {}): RuntimeContainer {
  return {
    id: "c1",
    sandboxId: "s1",
    uid: UID,
    namespace: NS,
    podName: "web",
    name: "main",
    attempt: 0,
    state: "running",
    ...over,
  };
}

function observation(over: Partial<Observation> = {}): Observation {
  return {
    now: NOW,
    namespaces: [NS],
    sandboxes: [{ id: "s1", uid: UID, namespace: NS, name: "web", ready: true }],
    containers: [container()],
    pods: [pod()],
    deleted: new Map(),
    podDirs: [UID],
    mountPoints: [`/root/pods/${UID}/volumes/kubernetes.io~empty-dir/scratch`],
    rootDir: "/root",
    fds: 40,
    ...over,
  };
}

const messages = (o: Observation, baseline?: Baseline) =>
  violationsOf(o, baseline, DEFAULT_BOUNDS).map((v) => v.message);

Deno.test("invariants: a consistent node has no violation", () => {
  assert.deepEqual(messages(observation()), []);
});

Deno.test("invariants: runtimeView reads the kubelet's labels and CRI states", () => {
  const view = runtimeView(
    [{
      id: "s1",
      metadata: { name: "web", uid: UID, namespace: NS, attempt: 0 },
      state: PodSandboxState.SANDBOX_NOTREADY,
      createdAt: 0,
      labels: {
        "io.kubernetes.pod.uid": UID,
        "io.kubernetes.pod.name": "web",
        "io.kubernetes.pod.namespace": NS,
      },
      annotations: {},
      runtimeHandler: "",
    }],
    [{
      id: "c1",
      podSandboxId: "s1",
      metadata: { name: "main", attempt: 2 },
      image: { image: "busybox" },
      imageRef: "",
      state: ContainerState.CONTAINER_EXITED,
      createdAt: 0,
      labels: {
        "io.kubernetes.pod.uid": UID,
        "io.kubernetes.pod.name": "web",
        "io.kubernetes.pod.namespace": NS,
        "io.kubernetes.container.name": "main",
      },
      annotations: {},
    }],
  );
  assert.deepEqual(view.sandboxes, [{
    id: "s1",
    uid: UID,
    namespace: NS,
    name: "web",
    ready: false,
  }]);
  assert.deepEqual(view.containers, [container({ attempt: 2, state: "exited" })]);
});

Deno.test("invariants: one attempt created twice and two running containers are hard", () => {
  const found = violationsOf(
    observation({
      containers: [container(), container({ id: "c2", state: "exited" })],
    }),
    undefined,
  );
  assert.deepEqual(found.map((v) => [v.hard, v.message]), [
    [true, `${NS}/web container main attempt 0 created 2 times (c1, c2)`],
  ]);
  const twice = messages(
    observation({ containers: [container(), container({ id: "c2", attempt: 1 })] }),
  );
  assert.ok(twice.includes(`${NS}/web container main running 2 times (c1, c2)`), twice.join("\n"));
});

Deno.test("invariants: a ready sandbox and a running container of a pod the API lacks", () => {
  const o = observation({ pods: [], podDirs: [], mountPoints: [] });
  assert.deepEqual(messages(o), [
    `sandbox s1 of gone pod ${NS}/web is ready`,
    `container main (c1) of gone pod ${NS}/web is running`,
  ]);
  // Within the bound after its deletion, a pod may still be terminating.
  const deleted = new Map([[`${NS}/web`, NOW - 5_000]]);
  assert.deepEqual(messages({ ...o, deleted }), []);
});

Deno.test("invariants: a deleted pod's leftovers past the GC bound, its API object past the bound", () => {
  const deleted = new Map([[`${NS}/web`, NOW - DEFAULT_BOUNDS.collectedBoundMs - 1]]);
  const o = observation({
    pods: [],
    sandboxes: [{ id: "s1", uid: UID, namespace: NS, name: "web", ready: false }],
    containers: [container({ state: "exited" })],
    deleted,
    podDirs: [],
    mountPoints: [],
  });
  assert.deepEqual(messages(o), [
    `sandbox s1 of deleted pod ${NS}/web not collected`,
    `container main (c1) of deleted pod ${NS}/web not collected`,
  ]);
  const still = observation({ deleted: new Map([[`${NS}/web`, NOW - 40_000]]) });
  assert.deepEqual(messages(still), [`deleted pod ${NS}/web still in the API 40 s later`]);
  // Each leftover names what the checker may ask the runtime to remove.
  assert.deepEqual(violationsOf(o, undefined).map((v) => v.uncollected), [
    { kind: "sandbox", id: "s1" },
    { kind: "container", id: "c1" },
  ]);
});

Deno.test("invariants: a removal a fault cut, by the agent's log", () => {
  const id = "37c677cd817214de058e9df78acdbd7eb95370f2a548fd1a6092afb119a390a6";
  // The GC's line of the CRI proxy run of 2026-12-04 (seed 167664747), a reset mid-call.
  const cut = `E1204 18:24:42.659083    8377 container_gc.ts:330] "Failed to remove sandbox" ` +
    `err="failed to remove sandbox 37c677cd81721: RemovePodSandbox \\"${id}\\": rpc error: ` +
    `code = Unavailable desc = connection to /tmp/x/cri-proxy.sock lost: read ECONNRESET" ` +
    `component="container-gc"`;
  assert.equal(agentRemovalWasCut(`a line\n${cut}\nanother`, id), true);
  assert.equal(agentRemovalWasCut(cut.replace("Unavailable", "DeadlineExceeded"), id), true);
  // A refusal is no cut; nor is another sandbox's, nor a line about no removal.
  assert.equal(agentRemovalWasCut(cut.replace("Unavailable", "FailedPrecondition"), id), false);
  assert.equal(agentRemovalWasCut(cut.replaceAll(id, "other"), id), false);
  assert.equal(
    agentRemovalWasCut(cut.replace("Failed to remove sandbox", "Sync failed"), id),
    false,
  );
});

Deno.test("invariants: a removal the runtime refused the agent, and the sandbox holding it", () => {
  const id = "1d530831a0b6aec1ec59a83ab6d1aa440861d2e38d5480ec222ac6582dfba125";
  const refused =
    `E1203 20:03:43.110162   16020 container_gc.ts:305] "Failed to remove container" ` +
    `err="RemoveContainer \\"${id}\\": rpc error: code = FailedPrecondition desc = failed ` +
    `to delete containerd container: cannot delete running task" containerID="${id}"`;
  assert.equal(agentWasRefused(`a line\n${refused}\nanother`, id), true);
  // Another code, or another container's refusal, is no evidence.
  assert.equal(agentWasRefused(refused.replace("FailedPrecondition", "Unavailable"), id), false);
  assert.equal(agentWasRefused(refused.replaceAll(id, "other"), id), false);
  const o = observation({
    containers: [container({ state: "exited" }), { ...container({}), id: "c2", sandboxId: "s2" }],
  });
  assert.deepEqual([...sandboxesHolding(o, new Set(["c1"]))], ["s1"]);
  assert.deepEqual([...sandboxesHolding(o, new Set())], []);
});

Deno.test("invariants: the API status must say what the runtime runs", () => {
  assert.deepEqual(messages(observation({ pods: [pod({ running: "c0" })] })), [
    `${NS}/web container main: the runtime runs c1, the API says {"id":"c0","state":["running"]}`,
    `${NS}/web container main: the API says running c0, the runtime does not run it`,
  ]);
  assert.deepEqual(messages(observation({ pods: [pod({ ready: false })] })), [
    `${NS}/web container main runs but is not ready`,
  ]);
  const pending = pod();
  pending.status!.phase = "Pending";
  assert.deepEqual(messages(observation({ pods: [pending] })), [
    `${NS}/web has running containers, phase Pending`,
  ]);
  const readyButNot = pod();
  readyButNot.status!.containerStatuses![0]!.ready = false;
  readyButNot.spec.containers[0]!.readinessProbe = { exec: { command: ["true"] } };
  assert.deepEqual(messages(observation({ pods: [readyButNot] })), [
    `${NS}/web is Ready with a container not ready`,
  ]);
});

Deno.test("invariants: a healthy pod's container restarted against the baseline", () => {
  const baseline: Baseline = {
    pods: new Map([[UID, {
      namespace: NS,
      name: "web",
      containers: new Map([["main", { id: "c0", restartCount: 0 }]]),
    }]]),
  };
  const found = violationsOf(observation(), baseline);
  assert.deepEqual(found.filter((v) => v.hard).map((v) => v.message), [
    `healthy pod ${NS}/web container main restarted: c0 → c1`,
    `healthy pod ${NS}/web container main has a second running container c1`,
  ]);
  assert.deepEqual(
    messages(observation(), {
      pods: new Map([[UID, {
        ...baseline.pods.get(UID)!,
        containers: new Map([["main", { id: "c1", restartCount: 0 }]]),
      }]]),
    }),
    [],
  );
});

Deno.test("invariants: dirs and mounts of gone pods, and too many fds", () => {
  const o = observation({
    podDirs: [UID, GONE, "not-a-uid"],
    mountPoints: [`/root/pods/${GONE}/volumes/kubernetes.io~secret/token`],
    fds: DEFAULT_BOUNDS.maxFds + 1,
  });
  assert.deepEqual(messages(o), [
    `pod dir /root/pods/${GONE} of a gone pod`,
    `mount /root/pods/${GONE}/volumes/kubernetes.io~secret/token of a gone pod`,
    `the agent holds ${DEFAULT_BOUNDS.maxFds + 1} fds (bound ${DEFAULT_BOUNDS.maxFds})`,
  ]);
  assert.deepEqual(messages(observation({ fds: undefined })), ["the agent is not running"]);
});

Deno.test("invariants: a deleted pod still there within its bound is pending, not a violation", () => {
  const o = observation({ deleted: new Map([[`${NS}/web`, NOW - 5_000]]) });
  assert.deepEqual(pendingDeletions(o, DEFAULT_BOUNDS), [`${NS}/web`]);
  assert.deepEqual(messages(o), []);
  const gone = observation({
    pods: [],
    containers: [],
    sandboxes: [],
    podDirs: [],
    mountPoints: [],
  });
  assert.deepEqual(pendingDeletions({ ...gone, deleted: o.deleted }, DEFAULT_BOUNDS), []);
  const late = observation({ deleted: new Map([[`${NS}/web`, NOW - 60_000]]) });
  assert.deepEqual(pendingDeletions(late, DEFAULT_BOUNDS), []);
});
