import assert from "node:assert/strict";
import type {
  Container as CriContainer,
  ContainerStatus as CriContainerStatus,
  PodSandbox,
  PodSandboxStatus,
  RuntimeService,
} from "../../lib/cri/types.ts";
import { ContainerState, NamespaceMode, PodSandboxState } from "../../lib/cri/types.ts";
import { CriError, GrpcCode } from "../../lib/cri/errors.ts";
import {
  containerFromStatus,
  getPodStatus,
  groupPods,
  sandboxFromStatus,
} from "../../lib/kuberuntime/runtime_status.ts";

const MS = 1e6;
const podLabels = (uid: string) => ({
  "io.kubernetes.pod.uid": uid,
  "io.kubernetes.pod.name": `pod-${uid}`,
  "io.kubernetes.pod.namespace": "default",
});

function sandbox(id: string, uid: string, createdMs: number, ready = true): PodSandbox {
  return {
    id,
    metadata: { name: `pod-${uid}`, uid, namespace: "default", attempt: 1 },
    state: ready ? PodSandboxState.SANDBOX_READY : PodSandboxState.SANDBOX_NOTREADY,
    createdAt: createdMs * MS,
    labels: podLabels(uid),
    annotations: {},
    runtimeHandler: "",
  };
}

function container(
  id: string,
  uid: string,
  name: string,
  createdMs: number,
  restarts = 0,
): CriContainer {
  return {
    id,
    podSandboxId: `sb-${uid}`,
    metadata: { name, attempt: restarts },
    image: { image: "busybox" },
    imageRef: "sha256:1",
    state: ContainerState.CONTAINER_RUNNING,
    createdAt: createdMs * MS,
    labels: { ...podLabels(uid), "io.kubernetes.container.name": name },
    annotations: {
      "io.kubernetes.container.restartCount": String(restarts),
      "io.kubernetes.container.hash": "abc",
    },
  };
}

Deno.test("groupPods() groups by pod UID label, newest first, and skips foreign objects", () => {
  const foreign = { ...sandbox("x", "none", 1), labels: {} };
  const pods = groupPods(
    [sandbox("s1", "a", 100, false), sandbox("s2", "a", 200), foreign],
    [
      container("c1", "a", "web", 110),
      container("c2", "a", "web", 210, 1),
      container("c3", "b", "db", 50),
    ],
  );
  assert.deepEqual([...pods.keys()].sort(), ["a", "b"]);
  const a = pods.get("a")!;
  assert.equal(a.name, "pod-a");
  assert.deepEqual(a.sandboxes.map((s) => [s.id, s.state]), [["s2", "ready"], ["s1", "notready"]]);
  assert.deepEqual(a.containers.map((c) => [c.id, c.restartCount, c.hash]), [["c2", 1, "abc"], [
    "c1",
    0,
    "abc",
  ]]);
  assert.equal(a.containers[0]!.createdAt, 210);
  assert.equal(a.containers[0]!.exitCode, 0);
  assert.equal(pods.get("b")!.sandboxes.length, 0);
});

Deno.test("sandboxFromStatus() reads IPs and the node network mode", () => {
  const base: PodSandboxStatus = {
    id: "s1",
    metadata: { name: "p", uid: "u", namespace: "default", attempt: 2 },
    state: PodSandboxState.SANDBOX_READY,
    createdAt: 5 * MS,
    network: { ip: "10.0.0.5", additionalIps: [{ ip: "fd00::5" }] },
    linux: { namespaces: { options: { network: NamespaceMode.POD } } },
    labels: {},
    annotations: {},
    runtimeHandler: "",
  };
  assert.deepEqual(sandboxFromStatus(base), {
    id: "s1",
    state: "ready",
    attempt: 2,
    createdAt: 5,
    ip: "10.0.0.5",
    additionalIps: ["fd00::5"],
    hostNetwork: false,
  });
  const host = sandboxFromStatus({
    ...base,
    linux: { namespaces: { options: { network: NamespaceMode.NODE } } },
  });
  assert.equal(host.hostNetwork, true);
  assert.equal(host.ip, "");
});

Deno.test("containerFromStatus() converts times to ms and keeps exit details", () => {
  const s: CriContainerStatus = {
    id: "c1",
    metadata: { name: "web", attempt: 3 },
    state: ContainerState.CONTAINER_EXITED,
    createdAt: 1000 * MS,
    startedAt: 1001 * MS,
    finishedAt: 1500 * MS,
    exitCode: 137,
    image: { image: "busybox" },
    imageRef: "sha256:1",
    reason: "OOMKilled",
    message: "out of memory",
    labels: { "io.kubernetes.container.name": "web" },
    annotations: {
      "io.kubernetes.container.restartCount": "3",
      "io.kubernetes.container.hash": "h",
    },
    mounts: [],
    logPath: "",
  };
  assert.deepEqual(containerFromStatus(s, "sb"), {
    id: "c1",
    sandboxId: "sb",
    name: "web",
    state: "exited",
    createdAt: 1000,
    startedAt: 1001,
    finishedAt: 1500,
    exitCode: 137,
    reason: "OOMKilled",
    message: "out of memory",
    image: "busybox",
    imageRef: "sha256:1",
    restartCount: 3,
    hash: "h",
  });
});

Deno.test("getPodStatus() asks for details and drops objects that vanished meanwhile", async () => {
  const calls: string[] = [];
  const runtime = {
    listPodSandbox: (f?: { labelSelector?: Record<string, string> }) => {
      calls.push(`listPodSandbox ${JSON.stringify(f?.labelSelector)}`);
      return Promise.resolve([sandbox("s1", "a", 100)]);
    },
    listContainers: () =>
      Promise.resolve([container("c1", "a", "web", 110), container("gone", "a", "web", 90)]),
    podSandboxStatus: (id: string) =>
      Promise.resolve({
        status: {
          ...sandbox(id, "a", 100),
          network: { ip: "10.0.0.9", additionalIps: [] },
        },
        info: {},
      }),
    containerStatus: (id: string) => {
      if (id === "gone") {
        return Promise.reject(
          new CriError({
            call: "ContainerStatus",
            code: GrpcCode.NOT_FOUND,
            details: "no",
            object: id,
          }),
        );
      }
      const c = container(id, "a", "web", 110);
      return Promise.resolve({
        status: {
          ...c,
          startedAt: 111 * MS,
          finishedAt: 0,
          exitCode: 0,
          reason: "",
          message: "",
          mounts: [],
          logPath: "",
        },
        info: {},
      });
    },
  } as unknown as RuntimeService;
  const status = await getPodStatus(runtime, "a", () => Promise.reject(new Error("no logs")));
  assert.equal(calls[0], `listPodSandbox {"io.kubernetes.pod.uid":"a"}`);
  assert.equal(status.name, "pod-a");
  assert.equal(status.sandboxes[0]!.ip, "10.0.0.9");
  assert.deepEqual(status.containers.map((c) => [c.id, c.startedAt, c.sandboxId]), [[
    "c1",
    111,
    "sb-a",
  ]]);
});
