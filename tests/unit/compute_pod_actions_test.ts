import { deepStrictEqual, ok } from "node:assert";
import type { Container, Pod } from "../../lib/api/types.ts";
import { computePodActions, type ProbeResult } from "../../lib/kuberuntime/compute_pod_actions.ts";
import { hashContainer } from "../../lib/kuberuntime/hash.ts";
import {
  backoffKey,
  type PodActions,
  type RuntimeContainer,
  type RuntimePodStatus,
} from "../../lib/kuberuntime/types.ts";
import type { BackoffEntry } from "../../lib/util/backoff.ts";
import {
  containerAt,
  exitedContainer,
  podActions,
  runtimeContainer,
  runtimePodStatus,
  runtimeSandbox,
  testPod,
} from "../kit/mod.ts";

const NOW = Date.parse("2026-01-01T00:10:00Z");
const POD_ID = { name: "foo", namespace: "new", uid: "12345678" };

function basePod(): Pod {
  return testPod({
    ...POD_ID,
    containers: ["foo1", "foo2", "foo3"],
    spec: { restartPolicy: "Always" },
  });
}

let seq = 0;
/** A fresh id and creation a minute ago, for one more runtime instance. */
function fresh(spec: Container): Partial<RuntimeContainer> {
  seq++;
  return { id: `${spec.name}-id${seq}`, createdAt: NOW - 60_000, startedAt: NOW - 60_000 };
}

/** A runtime instance of `spec`, running unless told otherwise. */
function instance(spec: Container, extra: Partial<RuntimeContainer> = {}): RuntimeContainer {
  return runtimeContainer(spec, { ...fresh(spec), ...extra });
}

function exited(spec: Container, exitCode: number, extra: Partial<RuntimeContainer> = {}) {
  return exitedContainer(spec, exitCode, { ...fresh(spec), finishedAt: NOW - 5_000, ...extra });
}

function baseStatus(pod: Pod): RuntimePodStatus {
  return runtimePodStatus({
    ...POD_ID,
    sandboxes: [runtimeSandbox({ createdAt: NOW - 120_000, ip: "10.0.0.5" })],
    containers: pod.spec.containers.map((c) => instance(c)),
  });
}

interface Case {
  name: string;
  mutate: (pod: Pod, status: RuntimePodStatus, env: Env) => void;
  expect: (pod: Pod, status: RuntimePodStatus) => PodActions;
}

interface Env {
  backoff: Map<string, BackoffEntry>;
  liveness: Map<string, ProbeResult>;
  startup: Map<string, ProbeResult>;
}

function setContainer(status: RuntimePodStatus, c: RuntimeContainer): void {
  status.containers = [c, ...status.containers.filter((x) => x.name !== c.name)];
}

function idOf(status: RuntimePodStatus, name: string): string {
  const c = status.containers.find((x) => x.name === name);
  if (!c) throw new Error(`no instance of ${name}`);
  return c.id;
}

function withInit(pod: Pod, status: RuntimePodStatus, names = ["init1", "init2"]): void {
  pod.spec.initContainers = names.map((name) => ({ name, image: "busybox" }));
  status.containers = [];
}

/**
 * Gives the pod the init containers named (a "sc" prefix makes a sidecar)
 * and, unless `keepApps`, no runtime containers at all.
 */
function withInits(pod: Pod, status: RuntimePodStatus, names: string[], keepApps = false): void {
  pod.spec.initContainers = names.map((name) => ({
    name,
    image: "busybox",
    ...(name.startsWith("sc") ? { restartPolicy: "Always" as const } : {}),
  }));
  if (!keepApps) status.containers = [];
}

/** Adds ephemeral containers (`kubectl debug`) targeting the first app container. */
function withDebuggers(pod: Pod, names: string[]): void {
  pod.spec.ephemeralContainers = names.map((name) => ({
    name,
    image: "busybox",
    targetContainerName: "foo1",
  }));
}

function ephemeralAt(pod: Pod, idx: number): Container {
  const spec = pod.spec.ephemeralContainers?.[idx];
  if (!spec) throw new Error(`no ephemeral container ${idx}`);
  return spec;
}

const EXEC_PROBE = { exec: { command: ["true"] } };

function crashLoop(name: string, delay: number) {
  return {
    name,
    reason: "CrashLoopBackOff",
    message: `back-off ${delay / 1000}s restarting failed container=${name} pod=foo_new(12345678)`,
    until: NOW - 5_000 + delay,
  };
}

function inBackoffEntry(c: Container, delayMs = 20_000): [string, BackoffEntry] {
  return [backoffKey(POD_ID, c.name, hashContainer(c)), { delayMs, lastUpdate: NOW - 6_000 }];
}

function kill(status: RuntimePodStatus, name: string, reason: string, message: string) {
  return { containerId: idOf(status, name), name, reason, message };
}

const cases: Case[] = [
  {
    name: "does nothing when every container runs with its spec",
    mutate: () => {},
    expect: () => podActions(),
  },
  {
    name: "creates a sandbox and starts all containers for a new pod",
    mutate: (_p, s) => {
      s.sandboxes = [];
      s.containers = [];
    },
    expect: () =>
      podActions({
        killPod: true,
        createSandbox: true,
        sandboxId: "",
        containersToStart: [0, 1, 2],
      }),
  },
  {
    name: "re-creates a sandbox that is not ready, with the next attempt",
    mutate: (_p, s) => {
      s.sandboxes[0]!.state = "notready";
      s.sandboxes[0]!.attempt = 2;
    },
    expect: () =>
      podActions({ killPod: true, createSandbox: true, attempt: 3, containersToStart: [0, 1, 2] }),
  },
  {
    name: "re-creates the sandbox when more than one is ready",
    mutate: (_p, s) => {
      s.sandboxes.push({ ...s.sandboxes[0]!, id: "sb0", attempt: 1 });
    },
    expect: () =>
      podActions({ killPod: true, createSandbox: true, attempt: 2, containersToStart: [0, 1, 2] }),
  },
  {
    name: "re-creates the sandbox when hostNetwork changed",
    mutate: (p) => {
      p.spec.hostNetwork = true;
    },
    expect: () =>
      podActions({
        killPod: true,
        createSandbox: true,
        sandboxId: "",
        attempt: 1,
        containersToStart: [0, 1, 2],
      }),
  },
  {
    name: "only kills a restartPolicy Never pod whose sandbox died after its containers ran",
    mutate: (p, s) => {
      p.spec.restartPolicy = "Never";
      s.sandboxes[0]!.state = "notready";
      s.containers = p.spec.containers.map((c) => exited(c, 0));
    },
    expect: () => podActions({ killPod: true, attempt: 1 }),
  },
  {
    name: "retries the sandbox of a restartPolicy Never pod that never created a container",
    mutate: (p, s) => {
      p.spec.restartPolicy = "Never";
      s.sandboxes[0]!.state = "notready";
      s.containers = [];
    },
    expect: () =>
      podActions({ killPod: true, createSandbox: true, attempt: 1, containersToStart: [0, 1, 2] }),
  },
  {
    name: "re-creates the sandbox of an OnFailure pod and starts only the failed containers",
    mutate: (p, s) => {
      p.spec.restartPolicy = "OnFailure";
      s.sandboxes[0]!.state = "notready";
      s.containers = [
        exited(containerAt(p, 0), 0),
        exited(containerAt(p, 1), 1),
        exited(containerAt(p, 2), 2),
      ];
    },
    expect: () =>
      podActions({ killPod: true, createSandbox: true, attempt: 1, containersToStart: [1, 2] }),
  },
  {
    name: "does not re-create the sandbox of an OnFailure pod whose containers all succeeded",
    mutate: (p, s) => {
      p.spec.restartPolicy = "OnFailure";
      s.sandboxes[0]!.state = "notready";
      s.containers = p.spec.containers.map((c) => exited(c, 0));
    },
    expect: () => podActions({ killPod: true, attempt: 1 }),
  },
  {
    name: "starts from the first init container when the sandbox is re-created",
    mutate: (p, s) => {
      withInit(p, s);
      s.sandboxes[0]!.state = "notready";
    },
    expect: () =>
      podActions({ killPod: true, createSandbox: true, attempt: 1, initContainersToStart: [0] }),
  },
  {
    name: "restarts an exited container with restartPolicy Always",
    mutate: (p, s) => setContainer(s, exited(containerAt(p, 1), 0)),
    expect: () => podActions({ containersToStart: [1] }),
  },
  {
    name: "does not restart a container that succeeded with restartPolicy OnFailure",
    mutate: (p, s) => {
      p.spec.restartPolicy = "OnFailure";
      setContainer(s, exited(containerAt(p, 1), 0));
    },
    expect: () => podActions(),
  },
  {
    name: "restarts a container that failed with restartPolicy OnFailure",
    mutate: (p, s) => {
      p.spec.restartPolicy = "OnFailure";
      setContainer(s, exited(containerAt(p, 2), 137));
    },
    expect: () => podActions({ containersToStart: [2] }),
  },
  {
    name: "does not restart an exited container with restartPolicy Never",
    mutate: (p, s) => {
      p.spec.restartPolicy = "Never";
      setContainer(s, exited(containerAt(p, 0), 1));
    },
    expect: () => podActions(),
  },
  {
    name: "starts a never-started container even with restartPolicy Never",
    mutate: (p, s) => {
      p.spec.restartPolicy = "Never";
      s.containers = s.containers.filter((c) => c.name !== "foo3");
    },
    expect: () => podActions({ containersToStart: [2] }),
  },
  {
    name: "starts a container left in the created state",
    mutate: (p, s) => setContainer(s, instance(containerAt(p, 0), { state: "created" })),
    expect: () => podActions({ containersToStart: [0] }),
  },
  {
    name: "kills a container in an unknown state before restarting it",
    mutate: (p, s) => setContainer(s, instance(containerAt(p, 0), { state: "unknown" })),
    expect: (_p, s) =>
      podActions({
        containersToStart: [0],
        containersToKill: [
          kill(
            s,
            "foo1",
            "Unknown",
            `Container is in "unknown" state, try killing it before restart`,
          ),
        ],
      }),
  },
  {
    name: "restarts a container whose spec hash changed",
    mutate: (p, s) => setContainer(s, instance(containerAt(p, 1), { hash: "deadbeef" })),
    expect: (_p, s) =>
      podActions({
        containersToStart: [1],
        containersToKill: [
          kill(s, "foo2", "SpecChanged", "Container foo2 definition changed, will be restarted"),
        ],
      }),
  },
  {
    // The apiserver's defaults (and any other field but name and image) are not hashed,
    // as upstream's pickFieldsToHash: a pod read back with them restarts nothing.
    name: "keeps a running container whose spec gained the apiserver's defaulted fields",
    mutate: (p) => {
      for (const c of p.spec.containers) {
        Object.assign(c, {
          imagePullPolicy: "IfNotPresent",
          terminationMessagePath: "/dev/termination-log",
          terminationMessagePolicy: "File",
          resources: {},
          ports: [{ containerPort: 80, protocol: "TCP" }],
          env: [{ name: "A", value: "1" }],
        });
      }
    },
    expect: () => podActions(),
  },
  {
    name: "restarts a container whose image changed",
    mutate: (p) => {
      p.spec.containers[1]!.image = "other:2";
    },
    expect: (_p, s) =>
      podActions({
        containersToStart: [1],
        containersToKill: [
          kill(s, "foo2", "SpecChanged", "Container foo2 definition changed, will be restarted"),
        ],
      }),
  },
  {
    name: "restarts a changed container even with restartPolicy Never",
    mutate: (p, s) => {
      p.spec.restartPolicy = "Never";
      setContainer(s, instance(containerAt(p, 1), { hash: "deadbeef" }));
    },
    expect: (_p, s) =>
      podActions({
        containersToStart: [1],
        containersToKill: [
          kill(s, "foo2", "SpecChanged", "Container foo2 definition changed, will be restarted"),
        ],
      }),
  },
  {
    name: "kills and restarts a container that failed its liveness probe",
    mutate: (_p, s, env) => env.liveness.set(idOf(s, "foo1"), "failure"),
    expect: (_p, s) =>
      podActions({
        containersToStart: [0],
        containersToKill: [
          kill(
            s,
            "foo1",
            "LivenessProbe",
            "Container foo1 failed liveness probe, will be restarted",
          ),
        ],
      }),
  },
  {
    name: "kills with the liveness probe's own terminationGracePeriodSeconds",
    mutate: (p, s, env) => {
      p.spec.containers[0]!.livenessProbe = {
        exec: { command: ["true"] },
        terminationGracePeriodSeconds: 3,
      };
      // The running instance was started from this spec: only the probe failed.
      for (const c of s.containers) {
        if (c.name === "foo1") c.hash = hashContainer(p.spec.containers[0]!);
      }
      env.liveness.set(idOf(s, "foo1"), "failure");
    },
    expect: (_p, s) =>
      podActions({
        containersToStart: [0],
        containersToKill: [{
          ...kill(
            s,
            "foo1",
            "LivenessProbe",
            "Container foo1 failed liveness probe, will be restarted",
          ),
          gracePeriodSeconds: 3,
        }],
      }),
  },
  {
    name: "keeps a container whose liveness probe succeeds",
    mutate: (_p, s, env) => env.liveness.set(idOf(s, "foo1"), "success"),
    expect: () => podActions(),
  },
  {
    name: "kills without restarting a liveness failure with restartPolicy Never",
    mutate: (p, s, env) => {
      p.spec.restartPolicy = "Never";
      env.liveness.set(idOf(s, "foo3"), "failure");
    },
    expect: (_p, s) =>
      podActions({
        containersToKill: [
          kill(s, "foo3", "LivenessProbe", "Container foo3 failed liveness probe"),
        ],
      }),
  },
  {
    name: "kills and restarts a container that failed its startup probe",
    mutate: (_p, s, env) => env.startup.set(idOf(s, "foo2"), "failure"),
    expect: (_p, s) =>
      podActions({
        containersToStart: [1],
        containersToKill: [
          kill(s, "foo2", "StartupProbe", "Container foo2 failed startup probe, will be restarted"),
        ],
      }),
  },
  {
    name: "kills a running container the spec no longer names",
    mutate: (_p, s) => {
      s.containers.unshift(instance({ name: "gone", image: "busybox" }));
    },
    expect: (_p, s) =>
      podActions({
        containersToKill: [kill(s, "gone", "NotInSpec", "Container gone is not in the pod spec")],
      }),
  },
  {
    name: "kills the pod when every container is done with restartPolicy Never",
    mutate: (p, s) => {
      p.spec.restartPolicy = "Never";
      s.containers = [
        exited(containerAt(p, 0), 0),
        exited(containerAt(p, 1), 1),
        exited(containerAt(p, 2), 0),
      ];
    },
    expect: () => podActions({ killPod: true }),
  },
  {
    name: "kills the pod when every container succeeded with restartPolicy OnFailure",
    mutate: (p, s) => {
      p.spec.restartPolicy = "OnFailure";
      s.containers = p.spec.containers.map((c) => exited(c, 0));
    },
    expect: () => podActions({ killPod: true }),
  },
  {
    name: "holds back a crashing container in CrashLoopBackOff",
    mutate: (p, s, env) => {
      setContainer(s, exited(containerAt(p, 0), 1));
      env.backoff.set(...inBackoffEntry(containerAt(p, 0)));
    },
    expect: () =>
      podActions({
        inBackoff: [{
          name: "foo1",
          reason: "CrashLoopBackOff",
          message: "back-off 20s restarting failed container=foo1 pod=foo_new(12345678)",
          until: NOW - 5_000 + 20_000,
        }],
      }),
  },
  {
    name: "does not kill the pod while its only crashing containers back off",
    mutate: (p, s, env) => {
      s.containers = p.spec.containers.map((c) => exited(c, 1));
      for (const c of p.spec.containers) env.backoff.set(...inBackoffEntry(c, 40_000));
    },
    expect: () =>
      podActions({
        inBackoff: ["foo1", "foo2", "foo3"].map((name) => ({
          name,
          reason: "CrashLoopBackOff",
          message: `back-off 40s restarting failed container=${name} pod=foo_new(12345678)`,
          until: NOW - 5_000 + 40_000,
        })),
      }),
  },
  {
    name: "restarts a crashing container once its backoff has passed",
    mutate: (p, s, env) => {
      setContainer(s, exited(containerAt(p, 0), 1, { finishedAt: NOW - 25_000 }));
      env.backoff.set(...inBackoffEntry(containerAt(p, 0)));
    },
    expect: () => podActions({ containersToStart: [0] }),
  },
  {
    name: "ignores a backoff entry older than twice the maximum delay",
    mutate: (p, s, env) => {
      setContainer(s, exited(containerAt(p, 0), 1, { finishedAt: NOW - 1_000 }));
      const [key] = inBackoffEntry(containerAt(p, 0));
      env.backoff.set(key, { delayMs: 300_000, lastUpdate: NOW - 1_000 - 600_001 });
    },
    expect: () => podActions({ containersToStart: [0] }),
  },
  {
    name: "does not apply the backoff of a previous spec to a changed container",
    mutate: (p, s, env) => {
      setContainer(s, exited(containerAt(p, 0), 1));
      env.backoff.set(backoffKey(POD_ID, "foo1", "oldhash"), { delayMs: 300_000, lastUpdate: NOW });
    },
    expect: () => podActions({ containersToStart: [0] }),
  },
  {
    name: "kills a crashing container's unknown instance even while it backs off",
    mutate: (p, s, env) => {
      setContainer(s, instance(containerAt(p, 0), { state: "unknown" }));
      s.containers.push(exited(containerAt(p, 0), 1));
      env.backoff.set(...inBackoffEntry(containerAt(p, 0)));
    },
    expect: (_p, s) =>
      podActions({
        containersToKill: [
          kill(
            s,
            "foo1",
            "Unknown",
            `Container is in "unknown" state, try killing it before restart`,
          ),
        ],
        inBackoff: [{
          name: "foo1",
          reason: "CrashLoopBackOff",
          message: "back-off 20s restarting failed container=foo1 pod=foo_new(12345678)",
          until: NOW - 5_000 + 20_000,
        }],
      }),
  },
  {
    name: "starts the first init container before any app container",
    mutate: (p, s) => withInit(p, s),
    expect: () => podActions({ initContainersToStart: [0] }),
  },
  {
    name: "waits while an init container runs",
    mutate: (p, s) => {
      withInit(p, s);
      s.containers = [instance(containerAt(p, 0, true))];
    },
    expect: () => podActions(),
  },
  {
    name: "starts the next init container when the previous one exited 0",
    mutate: (p, s) => {
      withInit(p, s);
      s.containers = [exited(containerAt(p, 0, true), 0)];
    },
    expect: () => podActions({ initContainersToStart: [1] }),
  },
  {
    name: "starts the app containers once every init container succeeded",
    mutate: (p, s) => {
      withInit(p, s);
      s.containers = [exited(containerAt(p, 1, true), 0), exited(containerAt(p, 0, true), 0)];
    },
    expect: () => podActions({ containersToStart: [0, 1, 2] }),
  },
  {
    name: "restarts a failed init container with restartPolicy Always",
    mutate: (p, s) => {
      withInit(p, s);
      s.containers = [exited(containerAt(p, 1, true), 1), exited(containerAt(p, 0, true), 0)];
    },
    expect: () => podActions({ initContainersToStart: [1] }),
  },
  {
    name: "restarts a failed init container with restartPolicy OnFailure",
    mutate: (p, s) => {
      p.spec.restartPolicy = "OnFailure";
      withInit(p, s);
      s.containers = [exited(containerAt(p, 0, true), 2)];
    },
    expect: () => podActions({ initContainersToStart: [0] }),
  },
  {
    name: "kills the pod when an init container failed with restartPolicy Never",
    mutate: (p, s) => {
      p.spec.restartPolicy = "Never";
      withInit(p, s);
      s.containers = [exited(containerAt(p, 0, true), 1)];
    },
    expect: () => podActions({ killPod: true }),
  },
  {
    name: "treats an OOM-killed init container as failed",
    mutate: (p, s) => {
      p.spec.restartPolicy = "Never";
      withInit(p, s);
      s.containers = [exited(containerAt(p, 0, true), 0, { reason: "OOMKilled" })];
    },
    expect: () => podActions({ killPod: true }),
  },
  {
    name: "kills an init container in an unknown state before restarting it",
    mutate: (p, s) => {
      withInit(p, s);
      s.containers = [instance(containerAt(p, 0, true), { state: "unknown" })];
    },
    expect: (_p, s) =>
      podActions({
        initContainersToStart: [0],
        containersToKill: [
          kill(
            s,
            "init1",
            "Unknown",
            `Init container is in "unknown" state, try killing it before restart`,
          ),
        ],
      }),
  },
  {
    name: "holds back a failed init container in CrashLoopBackOff",
    mutate: (p, s, env) => {
      withInit(p, s);
      s.containers = [exited(containerAt(p, 0, true), 1)];
      env.backoff.set(...inBackoffEntry(containerAt(p, 0, true), 10_000));
    },
    expect: () =>
      podActions({
        inBackoff: [{
          name: "init1",
          reason: "CrashLoopBackOff",
          message: "back-off 10s restarting failed container=init1 pod=foo_new(12345678)",
          until: NOW - 5_000 + 10_000,
        }],
      }),
  },
  {
    name: "treats initialization as done when an app container runs without init records",
    mutate: (p) => {
      p.spec.initContainers = [{ name: "init1", image: "busybox" }];
    },
    expect: () => podActions(),
  },
  {
    name: "does not start app containers while an init container waits",
    mutate: (p, s) => {
      withInit(p, s);
      s.containers = [
        exited(containerAt(p, 0, true), 0),
        instance(containerAt(p, 1, true), { state: "created" }),
      ];
      s.containers.reverse();
    },
    expect: () => podActions({ initContainersToStart: [1] }),
  },
  {
    name: "starts a sidecar first when it is the first init container",
    mutate: (p, s) => withInits(p, s, ["sc1", "init2"]),
    expect: () => podActions({ initContainersToStart: [0] }),
  },
  {
    name: "starts the next init container once a sidecar without startup probe runs",
    mutate: (p, s) => {
      withInits(p, s, ["sc1", "init2"]);
      s.containers = [instance(containerAt(p, 0, true))];
    },
    expect: () => podActions({ initContainersToStart: [1] }),
  },
  {
    name: "waits for a sidecar's startup probe before the next init container",
    mutate: (p, s) => {
      withInits(p, s, ["sc1", "init2"]);
      containerAt(p, 0, true).startupProbe = EXEC_PROBE;
      s.containers = [instance(containerAt(p, 0, true))];
    },
    expect: () => podActions(),
  },
  {
    name: "starts the next init container once the sidecar's startup probe succeeded",
    mutate: (p, s, env) => {
      withInits(p, s, ["sc1", "init2"]);
      containerAt(p, 0, true).startupProbe = EXEC_PROBE;
      s.containers = [instance(containerAt(p, 0, true))];
      env.startup.set(idOf(s, "sc1"), "success");
    },
    expect: () => podActions({ initContainersToStart: [1] }),
  },
  {
    name: "restarts a sidecar that failed its startup probe and starts nothing after it",
    mutate: (p, s, env) => {
      withInits(p, s, ["sc1", "init2"]);
      containerAt(p, 0, true).startupProbe = EXEC_PROBE;
      s.containers = [instance(containerAt(p, 0, true))];
      env.startup.set(idOf(s, "sc1"), "failure");
    },
    expect: (_p, s) =>
      podActions({
        initContainersToStart: [0],
        containersToKill: [
          kill(s, "sc1", "StartupProbe", "Init container sc1 failed startup probe"),
        ],
      }),
  },
  {
    name: "holds the app containers while the last init container is an unstarted sidecar",
    mutate: (p, s) => {
      withInits(p, s, ["init1", "sc2"]);
      containerAt(p, 1, true).startupProbe = EXEC_PROBE;
      s.containers = [instance(containerAt(p, 1, true)), exited(containerAt(p, 0, true), 0)];
    },
    expect: () => podActions(),
  },
  {
    name: "starts the app containers once init containers succeeded and sidecars started",
    mutate: (p, s) => {
      withInits(p, s, ["sc1", "init2"]);
      s.containers = [exited(containerAt(p, 1, true), 0), instance(containerAt(p, 0, true))];
    },
    expect: () => podActions({ containersToStart: [0, 1, 2] }),
  },
  {
    name: "starts the app containers once the last init container, a sidecar, started",
    mutate: (p, s) => {
      withInits(p, s, ["init1", "sc2"]);
      s.containers = [instance(containerAt(p, 1, true)), exited(containerAt(p, 0, true), 0)];
    },
    expect: () => podActions({ containersToStart: [0, 1, 2] }),
  },
  {
    name: "keeps a started sidecar running next to the app containers",
    mutate: (p, s) => {
      withInits(p, s, ["init1", "sc2"], true);
      s.containers.push(instance(containerAt(p, 1, true)), exited(containerAt(p, 0, true), 0));
    },
    expect: () => podActions(),
  },
  {
    name: "restarts an exited sidecar even with restartPolicy Never",
    mutate: (p, s) => {
      p.spec.restartPolicy = "Never";
      withInits(p, s, ["init1", "sc2"], true);
      s.containers.push(exited(containerAt(p, 1, true), 0), exited(containerAt(p, 0, true), 0));
    },
    expect: () => podActions({ initContainersToStart: [1] }),
  },
  {
    name: "restarts a sidecar whose record is gone but never re-runs a completed init container",
    mutate: (p, s) => withInits(p, s, ["init1", "sc2"], true),
    expect: () => podActions({ initContainersToStart: [1] }),
  },
  {
    name: "holds back a crashing sidecar in CrashLoopBackOff while the app containers run",
    mutate: (p, s, env) => {
      withInits(p, s, ["sc1"], true);
      s.containers.push(exited(containerAt(p, 0, true), 1));
      env.backoff.set(...inBackoffEntry(containerAt(p, 0, true)));
    },
    expect: () => podActions({ inBackoff: [crashLoop("sc1", 20_000)] }),
  },
  {
    name: "kills and restarts a sidecar that failed its liveness probe",
    mutate: (p, s, env) => {
      withInits(p, s, ["sc1"], true);
      containerAt(p, 0, true).livenessProbe = EXEC_PROBE;
      s.containers.push(instance(containerAt(p, 0, true)));
      env.liveness.set(idOf(s, "sc1"), "failure");
    },
    expect: (_p, s) =>
      podActions({
        initContainersToStart: [0],
        containersToKill: [
          kill(s, "sc1", "LivenessProbe", "Init container sc1 failed liveness probe"),
        ],
      }),
  },
  {
    name: "restarts a sidecar whose spec changed",
    mutate: (p, s) => {
      withInits(p, s, ["sc1"], true);
      s.containers.push(instance(containerAt(p, 0, true), { hash: "deadbeef" }));
    },
    expect: (_p, s) =>
      podActions({
        initContainersToStart: [0],
        containersToKill: [kill(s, "sc1", "SpecChanged", "Init container sc1 definition changed")],
      }),
  },
  {
    name: "kills and restarts a sidecar in an unknown state even with restartPolicy Never",
    mutate: (p, s) => {
      p.spec.restartPolicy = "Never";
      withInits(p, s, ["sc1"], true);
      s.containers.push(instance(containerAt(p, 0, true), { state: "unknown" }));
    },
    expect: (_p, s) =>
      podActions({
        initContainersToStart: [0],
        containersToKill: [
          kill(
            s,
            "sc1",
            "Unknown",
            `Init container is in "unknown" state, try killing it before restart`,
          ),
        ],
      }),
  },
  {
    name: "kills a Job-like pod with its running sidecar once the app containers completed",
    mutate: (p, s) => {
      p.spec.restartPolicy = "Never";
      withInits(p, s, ["sc1"]);
      s.containers = [
        ...p.spec.containers.map((c) => exited(c, 0)),
        instance(containerAt(p, 0, true)),
      ];
    },
    expect: () => podActions({ killPod: true }),
  },
  {
    name: "does not let a crash-looping sidecar keep a completed OnFailure pod alive",
    mutate: (p, s, env) => {
      p.spec.restartPolicy = "OnFailure";
      withInits(p, s, ["init1", "sc2"]);
      s.containers = [
        ...p.spec.containers.map((c) => exited(c, 0)),
        exited(containerAt(p, 1, true), 1),
        exited(containerAt(p, 0, true), 0),
      ];
      env.backoff.set(...inBackoffEntry(containerAt(p, 1, true)));
    },
    expect: () => podActions({ killPod: true }),
  },
  {
    name: "does not re-create the sandbox of a completed Job-like pod whose sidecar was killed",
    mutate: (p, s) => {
      p.spec.restartPolicy = "OnFailure";
      withInits(p, s, ["sc1"]);
      s.sandboxes[0]!.state = "notready";
      s.containers = [
        ...p.spec.containers.map((c) => exited(c, 0)),
        exited(containerAt(p, 0, true), 137),
      ];
    },
    expect: () => podActions({ killPod: true, attempt: 1 }),
  },
  {
    name: "kills the pod when a regular init container after a sidecar fails with Never",
    mutate: (p, s) => {
      p.spec.restartPolicy = "Never";
      withInits(p, s, ["sc1", "init2"]);
      s.containers = [exited(containerAt(p, 1, true), 1), instance(containerAt(p, 0, true))];
    },
    expect: () => podActions({ killPod: true }),
  },
  {
    name: "retries a failed init container after a sidecar without restarting the sidecar",
    mutate: (p, s) => {
      withInits(p, s, ["sc1", "init2"]);
      s.containers = [exited(containerAt(p, 1, true), 1), instance(containerAt(p, 0, true))];
    },
    expect: () => podActions({ initContainersToStart: [1] }),
  },
  {
    name: "starts the sidecars again from the first init container in a new sandbox",
    mutate: (p, s) => {
      withInits(p, s, ["sc1", "init2"], true);
      s.sandboxes[0]!.state = "notready";
      s.containers.push(exited(containerAt(p, 1, true), 0), instance(containerAt(p, 0, true)));
    },
    expect: () =>
      podActions({ killPod: true, createSandbox: true, attempt: 1, initContainersToStart: [0] }),
  },
  {
    name: "starts an ephemeral container the runtime has never seen",
    mutate: (p) => withDebuggers(p, ["dbg1", "dbg2"]),
    expect: () => podActions({ ephemeralContainersToStart: [0, 1] }),
  },
  {
    name: "never restarts an exited ephemeral container, whatever the restart policy",
    mutate: (p, s) => {
      withDebuggers(p, ["dbg1", "dbg2"]);
      s.containers.unshift(exited(ephemeralAt(p, 0), 1), exited(ephemeralAt(p, 1), 0));
    },
    expect: () => podActions(),
  },
  {
    name: "keeps a running ephemeral container whose spec changed",
    mutate: (p, s) => {
      withDebuggers(p, ["dbg1"]);
      s.containers.unshift(instance(ephemeralAt(p, 0), { hash: "older" }));
    },
    expect: () => podActions(),
  },
  {
    name: "starts an ephemeral container while an init container still runs",
    mutate: (p, s) => {
      withInit(p, s);
      s.containers = [instance(containerAt(p, 0, true))];
      withDebuggers(p, ["dbg1"]);
    },
    expect: () => podActions({ ephemeralContainersToStart: [0] }),
  },
  {
    name: "starts no ephemeral container in a sandbox being re-created",
    mutate: (p, s) => {
      withDebuggers(p, ["dbg1"]);
      s.sandboxes[0]!.state = "notready";
    },
    expect: () =>
      podActions({ killPod: true, createSandbox: true, attempt: 1, containersToStart: [0, 1, 2] }),
  },
  {
    name: "kills a finished pod whose ephemeral container still runs, starting no other",
    mutate: (p, s) => {
      p.spec.restartPolicy = "Never";
      withDebuggers(p, ["dbg1", "dbg2"]);
      s.containers = [
        instance(ephemeralAt(p, 0)),
        ...p.spec.containers.map((c) => exited(c, 0)),
      ];
    },
    expect: () => podActions({ killPod: true }),
  },
  {
    name: "starts no ephemeral container in a pod whose init container failed with Never",
    mutate: (p, s) => {
      p.spec.restartPolicy = "Never";
      withInit(p, s);
      s.containers = [exited(containerAt(p, 0, true), 1)];
      withDebuggers(p, ["dbg1"]);
    },
    expect: () => podActions({ killPod: true }),
  },
];

for (const c of cases) {
  Deno.test(`computePodActions() ${c.name}`, () => {
    const pod = basePod();
    const status = baseStatus(pod);
    const env: Env = { backoff: new Map(), liveness: new Map(), startup: new Map() };
    c.mutate(pod, status, env);
    const actual = computePodActions({
      pod,
      status,
      backoff: env.backoff,
      now: NOW,
      liveness: env.liveness,
      startup: env.startup,
    });
    deepStrictEqual(actual, c.expect(pod, status));
  });
}

Deno.test("computePodActions() is pure: the same input gives the same plan", () => {
  const pod = basePod();
  const status = baseStatus(pod);
  setContainer(status, exited(containerAt(pod, 0), 1));
  const frozen = JSON.stringify({ pod, status });
  const input = { pod, status, backoff: new Map(), now: NOW };
  const first = computePodActions(input);
  deepStrictEqual(computePodActions(input), first);
  ok(JSON.stringify({ pod, status }) === frozen, "input was mutated");
});
