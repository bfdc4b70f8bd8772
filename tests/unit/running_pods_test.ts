/**
 * runningApiPods(): the runtime's pods as the minimal API pods upstream's
 * `/runningpods/` serves (GetRunningPods and kubecontainer.Pod.ToAPIPod).
 */

import assert from "node:assert/strict";
import {
  runningApiPods,
  type RuntimeContainer,
  type RuntimePodStatus,
  type RuntimeSandbox,
} from "../../lib/kuberuntime/mod.ts";

function sandbox(id: string, state: RuntimeSandbox["state"], createdAt: number): RuntimeSandbox {
  return { id, state, attempt: 0, createdAt, ip: "", additionalIps: [], hostNetwork: true };
}

function container(
  id: string,
  name: string,
  state: RuntimeContainer["state"],
  createdAt: number,
): RuntimeContainer {
  return {
    id,
    sandboxId: "sb",
    name,
    state,
    createdAt,
    startedAt: 0,
    finishedAt: 0,
    exitCode: 0,
    reason: "",
    message: "",
    image: `img-${name}`,
    imageRef: "sha256:abc",
    restartCount: 0,
    hash: "",
  };
}

function pod(uid: string, over: Partial<RuntimePodStatus>): RuntimePodStatus {
  return { uid, name: `pod-${uid}`, namespace: "ns", sandboxes: [], containers: [], ...over };
}

Deno.test("runningApiPods() keeps only running containers, names and images, nothing else", () => {
  const pods = runningApiPods([
    pod("u1", {
      sandboxes: [sandbox("s1", "ready", 100)],
      containers: [
        container("c-old", "app", "exited", 110),
        container("c-side", "side", "running", 120),
        container("c-new", "app", "running", 130),
      ],
    }),
  ]);
  assert.deepEqual(pods, [{
    metadata: { name: "pod-u1", namespace: "ns", uid: "u1" },
    spec: {
      containers: [
        { name: "app", image: "img-app", resources: {} },
        { name: "side", image: "img-side", resources: {} },
      ],
    },
    status: {},
  }]);
});

Deno.test("runningApiPods() lists pods with a ready sandbox or a running container, newest sandbox first", () => {
  const pods = runningApiPods([
    pod("old", { sandboxes: [sandbox("s1", "ready", 100)] }),
    pod("stopped", {
      sandboxes: [sandbox("s2", "notready", 300)],
      containers: [container("c1", "app", "exited", 310)],
    }),
    pod("orphan", { containers: [container("c2", "app", "running", 400)] }),
    // Its oldest ready sandbox orders it, as upstream's last-assigned CreatedAt.
    pod("new", { sandboxes: [sandbox("s4", "ready", 500), sandbox("s3", "ready", 200)] }),
  ]);
  assert.deepEqual(pods.map((p) => p.metadata.uid), ["new", "old", "orphan"]);
  assert.deepEqual(pods[0]!.spec.containers, []);
});
