import { deepStrictEqual, ok, strictEqual } from "node:assert";
import type {
  Container,
  ContainerStatus,
  Pod,
  PodCondition,
  PodStatus,
} from "../../lib/api/types.ts";
import { podQOSClass } from "../../lib/api/mod.ts";
import type {
  ContainerInBackoff,
  RuntimeContainer,
  RuntimePodStatus,
} from "../../lib/kuberuntime/types.ts";
import {
  generatePodStatus,
  type GeneratePodStatusInput,
  podIsTerminal,
  StatusManager,
} from "../../lib/status/mod.ts";
import { FakeClock } from "../../lib/util/clock.ts";
import { silentLogger } from "../../lib/util/log.ts";
import { pastActiveDeadline } from "../../lib/agent/active_deadline.ts";
import {
  containerAt,
  exitedContainer,
  runtimeContainer,
  runtimePodStatus,
  runtimeSandbox,
  testPod,
} from "../kit/mod.ts";

const clock = new FakeClock(Date.parse("2026-01-01T00:10:00.250Z"));
const NOW = clock.now();
const T = (iso: string) => Date.parse(iso);

function basePod(names = ["a", "b"]): Pod {
  return testPod({ containers: names.map((name) => ({ name, image: `img-${name}` })) });
}

let seq = 0;
/** A fresh id, creation time and image ref, for one more runtime instance. */
function fresh(spec: Container): Partial<RuntimeContainer> {
  seq++;
  return {
    id: `${spec.name}${seq}`,
    createdAt: T("2026-01-01T00:01:00Z") + seq,
    startedAt: T("2026-01-01T00:01:00.900Z"),
    imageRef: `sha256:${spec.name}`,
  };
}

function instance(spec: Container, extra: Partial<RuntimeContainer> = {}): RuntimeContainer {
  return runtimeContainer(spec, { ...fresh(spec), ...extra });
}

function exited(spec: Container, exitCode: number, extra: Partial<RuntimeContainer> = {}) {
  return exitedContainer(spec, exitCode, {
    ...fresh(spec),
    finishedAt: T("2026-01-01T00:05:00Z"),
    ...extra,
  });
}

function runtimeOf(pod: Pod, containers: RuntimeContainer[]): RuntimePodStatus {
  return runtimePodStatus({
    sandboxes: [runtimeSandbox({
      createdAt: NOW - 600_000,
      ip: "10.1.0.7",
      additionalIps: ["fd00::7"],
      hostNetwork: pod.spec.hostNetwork === true,
    })],
    containers,
  });
}

function gen(
  pod: Pod,
  containers: RuntimeContainer[],
  extra: Partial<GeneratePodStatusInput> = {},
): PodStatus {
  return generatePodStatus({
    pod,
    runtime: runtimeOf(pod, containers),
    inBackoff: [],
    now: NOW,
    ...extra,
  });
}

function cond(status: PodStatus, type: string): PodCondition {
  const c = status.conditions?.find((x) => x.type === type);
  if (!c) throw new Error(`no ${type} condition`);
  return c;
}

function cs(status: PodStatus, name: string): ContainerStatus {
  const c = [...(status.containerStatuses ?? []), ...(status.initContainerStatuses ?? [])].find(
    (x) => x.name === name,
  );
  if (!c) throw new Error(`no status for ${name}`);
  return c;
}

const allRunning = (pod: Pod) => pod.spec.containers.map((c) => instance(c));

Deno.test("generatePodStatus() reports a pod whose containers all run as Running and Ready", () => {
  const pod = basePod();
  const s = gen(pod, allRunning(pod), { hostIP: "192.168.1.10" });
  strictEqual(s.phase, "Running");
  deepStrictEqual(
    s.conditions?.map((c) => `${c.type}=${c.status}`),
    [
      "PodReadyToStartContainers=True",
      "Initialized=True",
      "Ready=True",
      "ContainersReady=True",
      "PodScheduled=True",
    ],
  );
  const a = cs(s, "a");
  strictEqual(a.ready, true);
  strictEqual(a.started, true);
  ok(a.containerID?.startsWith("containerd://a"));
  strictEqual(a.imageID, "sha256:a");
  deepStrictEqual(a.state, { running: { startedAt: "2026-01-01T00:01:00Z" } });
  strictEqual(s.podIP, "10.1.0.7");
  deepStrictEqual(s.podIPs, [{ ip: "10.1.0.7" }, { ip: "fd00::7" }]);
  strictEqual(s.hostIP, "192.168.1.10");
  deepStrictEqual(s.hostIPs, [{ ip: "192.168.1.10" }]);
  strictEqual(s.startTime, "2026-01-01T00:10:00Z");
  strictEqual(s.qosClass, "BestEffort");
  strictEqual(cond(s, "Ready").lastTransitionTime, "2026-01-01T00:10:00Z");
  strictEqual(cond(s, "Ready").lastProbeTime, null);
});

Deno.test("generatePodStatus() reports a new pod as Pending with ContainerCreating", () => {
  const pod = basePod();
  const s = generatePodStatus({
    pod,
    runtime: { uid: "u1", name: "web", namespace: "default", sandboxes: [], containers: [] },
    inBackoff: [],
    now: NOW,
  });
  strictEqual(s.phase, "Pending");
  deepStrictEqual(cs(s, "a").state, { waiting: { reason: "ContainerCreating" } });
  strictEqual(cs(s, "a").image, "img-a");
  strictEqual(cond(s, "PodReadyToStartContainers").status, "False");
  deepStrictEqual(cond(s, "ContainersReady"), {
    type: "ContainersReady",
    status: "False",
    lastProbeTime: null,
    lastTransitionTime: "2026-01-01T00:10:00Z",
    reason: "ContainersNotReady",
    message: "containers with unready status: [a b]",
  });
  strictEqual(s.podIP, undefined);
  strictEqual(s.initContainerStatuses, undefined);
});

Deno.test("generatePodStatus() shows PodInitializing and ContainersNotInitialized while init runs", () => {
  const pod = basePod(["app"]);
  pod.spec.initContainers = [{ name: "setup", image: "img-setup" }];
  const s = gen(pod, [instance(containerAt(pod, 0, true))]);
  strictEqual(s.phase, "Pending");
  deepStrictEqual(cs(s, "app").state, { waiting: { reason: "PodInitializing" } });
  const init = cond(s, "Initialized");
  strictEqual(init.status, "False");
  strictEqual(init.reason, "ContainersNotInitialized");
  strictEqual(init.message, "containers with incomplete status: [setup]");
  strictEqual(s.initContainerStatuses?.length, 1);
});

Deno.test("generatePodStatus() marks a succeeded init container ready and the pod initialized", () => {
  const pod = basePod(["app"]);
  pod.spec.initContainers = [{ name: "setup" }];
  const s = gen(pod, [instance(containerAt(pod, 0)), exited(containerAt(pod, 0, true), 0)]);
  strictEqual(s.phase, "Running");
  strictEqual(cs(s, "setup").ready, true);
  strictEqual(cs(s, "setup").started, false);
  strictEqual(cond(s, "Initialized").status, "True");
});

Deno.test("generatePodStatus() fails a restartPolicy Never pod whose init container failed", () => {
  const pod = basePod(["app"]);
  pod.spec.restartPolicy = "Never";
  pod.spec.initContainers = [{ name: "setup" }];
  const s = gen(pod, [exited(containerAt(pod, 0, true), 3)]);
  strictEqual(s.phase, "Failed");
  strictEqual(cond(s, "Ready").reason, "PodFailed");
  strictEqual(cs(s, "setup").state.terminated?.exitCode, 3);
});

Deno.test("generatePodStatus() reports Succeeded for a Never pod whose containers exited 0", () => {
  const pod = basePod();
  pod.spec.restartPolicy = "Never";
  const s = gen(pod, pod.spec.containers.map((c) => exited(c, 0)));
  strictEqual(s.phase, "Succeeded");
  strictEqual(cond(s, "Ready").status, "False");
  strictEqual(cond(s, "Ready").reason, "PodCompleted");
  strictEqual(cond(s, "Initialized").reason, "PodCompleted");
  deepStrictEqual(cs(s, "a").state.terminated, {
    exitCode: 0,
    reason: "Completed",
    containerID: cs(s, "a").containerID,
    startedAt: "2026-01-01T00:01:00Z",
    finishedAt: "2026-01-01T00:05:00Z",
  });
  ok(podIsTerminal(s));
});

Deno.test("generatePodStatus() reports Failed for a Never pod with a failed container", () => {
  const pod = basePod();
  pod.spec.restartPolicy = "Never";
  const s = gen(pod, [exited(containerAt(pod, 0), 0), exited(containerAt(pod, 1), 1)]);
  strictEqual(s.phase, "Failed");
  ok(podIsTerminal(s));
});

Deno.test("generatePodStatus() keeps an OnFailure pod Running while a failed container restarts", () => {
  const pod = basePod();
  pod.spec.restartPolicy = "OnFailure";
  strictEqual(
    gen(pod, [exited(containerAt(pod, 0), 0), exited(containerAt(pod, 1), 1)]).phase,
    "Running",
  );
  strictEqual(gen(pod, pod.spec.containers.map((c) => exited(c, 0))).phase, "Succeeded");
});

Deno.test("generatePodStatus() keeps an Always pod Running while all containers restart", () => {
  const pod = basePod();
  const s = gen(pod, pod.spec.containers.map((c) => exited(c, 0)));
  strictEqual(s.phase, "Running");
  ok(!podIsTerminal(s));
});

Deno.test("generatePodStatus() gives a terminal phase when the pod worker says the pod is done", () => {
  const pod = basePod();
  const s = gen(pod, pod.spec.containers.map((c) => exited(c, 0)), { podIsTerminal: true });
  strictEqual(s.phase, "Succeeded");
});

Deno.test("generatePodStatus() shows CrashLoopBackOff with the last termination and restart count", () => {
  const pod = basePod(["a"]);
  const a = containerAt(pod, 0);
  const backoff: ContainerInBackoff = {
    name: "a",
    reason: "CrashLoopBackOff",
    message: "back-off 40s restarting failed container=a pod=web_default(u1)",
    until: NOW + 30_000,
  };
  const s = gen(
    pod,
    [exited(a, 1, { restartCount: 3 }), exited(a, 1, { restartCount: 2 })],
    { inBackoff: [backoff] },
  );
  const st = cs(s, "a");
  deepStrictEqual(st.state, { waiting: { reason: "CrashLoopBackOff", message: backoff.message } });
  strictEqual(st.lastState.terminated?.exitCode, 1);
  strictEqual(st.lastState.terminated?.containerID, st.containerID);
  strictEqual(st.restartCount, 3);
  strictEqual(st.ready, false);
  strictEqual(s.phase, "Running");
  strictEqual(cond(s, "Ready").message, "containers with unready status: [a]");
});

Deno.test("generatePodStatus() shows an image pull error as the waiting reason", () => {
  const pod = basePod(["a"]);
  const s = gen(pod, [], {
    lastErrors: new Map([["a", { reason: "ErrImagePull", message: "not found" }]]),
  });
  deepStrictEqual(cs(s, "a").state, { waiting: { reason: "ErrImagePull", message: "not found" } });
  strictEqual(s.phase, "Pending");
});

Deno.test("generatePodStatus() takes lastState from the previous instance of a running container", () => {
  const pod = basePod(["a"]);
  const a = containerAt(pod, 0);
  const s = gen(pod, [instance(a, { restartCount: 1 }), exited(a, 137, { reason: "OOMKilled" })]);
  const st = cs(s, "a");
  ok(st.state.running);
  strictEqual(st.lastState.terminated?.reason, "OOMKilled");
  strictEqual(st.restartCount, 1);
});

Deno.test("generatePodStatus() reports a created container as waiting", () => {
  const pod = basePod(["a"]);
  const s = gen(pod, [instance(containerAt(pod, 0), { state: "created" })]);
  deepStrictEqual(cs(s, "a").state, { waiting: {} });
  strictEqual(s.phase, "Pending");
});

Deno.test("generatePodStatus() keeps lastTransitionTime while a condition does not change", () => {
  const pod = basePod();
  const first = gen(pod, allRunning(pod));
  clock.tick(60_000);
  const later = generatePodStatus({
    pod,
    runtime: runtimeOf(pod, allRunning(pod)),
    inBackoff: [],
    previous: first,
    now: clock.now(),
    readiness: new Map(),
  });
  strictEqual(cond(later, "Ready").lastTransitionTime, "2026-01-01T00:10:00Z");
  strictEqual(later.startTime, "2026-01-01T00:10:00Z");
  const b = containerAt(pod, 1);
  const flipped = generatePodStatus({
    pod,
    runtime: runtimeOf(pod, [instance(containerAt(pod, 0)), exited(b, 1)]),
    inBackoff: [],
    previous: later,
    now: clock.now(),
  });
  strictEqual(cond(flipped, "Ready").status, "False");
  strictEqual(cond(flipped, "Ready").lastTransitionTime, "2026-01-01T00:11:00Z");
  strictEqual(cond(flipped, "PodScheduled").lastTransitionTime, "2026-01-01T00:10:00Z");
});

Deno.test("generatePodStatus() uses readiness results for ready and ContainersReady", () => {
  const pod = basePod();
  pod.spec.containers[1]!.readinessProbe = { httpGet: { port: 80 } };
  const containers = allRunning(pod);
  const noVerdict = gen(pod, containers);
  strictEqual(cs(noVerdict, "a").ready, true);
  strictEqual(cs(noVerdict, "b").ready, false);
  strictEqual(cond(noVerdict, "ContainersReady").message, "containers with unready status: [b]");
  const passing = gen(pod, containers, { readiness: new Map([[containers[1]!.id, true]]) });
  strictEqual(cond(passing, "Ready").status, "True");
});

Deno.test("generatePodStatus() keeps a terminal phase it already reported", () => {
  const pod = basePod();
  pod.spec.restartPolicy = "Never";
  const previous: PodStatus = { phase: "Failed", reason: "DeadlineExceeded", message: "too slow" };
  const s = gen(pod, allRunning(pod), { previous });
  strictEqual(s.phase, "Failed");
  strictEqual(s.reason, "DeadlineExceeded");
  strictEqual(s.message, "too slow");
});

Deno.test("generatePodStatus() lists app containers by name and init containers in spec order", () => {
  const pod = basePod(["zeta", "alpha"]);
  pod.spec.initContainers = [{ name: "second" }, { name: "first" }];
  const s = gen(pod, []);
  deepStrictEqual(s.containerStatuses?.map((c) => c.name), ["alpha", "zeta"]);
  deepStrictEqual(s.initContainerStatuses?.map((c) => c.name), ["second", "first"]);
});

Deno.test("generatePodStatus() uses the host IP as pod IP for a host-network pod", () => {
  const pod = basePod();
  pod.spec.hostNetwork = true;
  const runtime = runtimeOf(pod, allRunning(pod));
  runtime.sandboxes[0]!.ip = "";
  runtime.sandboxes[0]!.additionalIps = [];
  const s = generatePodStatus({ pod, runtime, inBackoff: [], hostIP: "192.168.1.10", now: NOW });
  strictEqual(s.podIP, "192.168.1.10");
  deepStrictEqual(s.podIPs, [{ ip: "192.168.1.10" }]);
});

Deno.test("generatePodStatus() reports a vanished running container as stopped, not waiting", () => {
  const pod = basePod(["a"]);
  const previous = gen(pod, allRunning(pod));
  const s = gen(pod, [], { previous });
  const st = cs(s, "a");
  strictEqual(st.lastState.terminated?.reason, "ContainerStatusUnknown");
  strictEqual(st.lastState.terminated?.exitCode, 137);
  strictEqual(st.restartCount, 1);
});

Deno.test("podQOSClass() decides Guaranteed, Burstable and BestEffort as upstream", () => {
  const pod = basePod(["a"]);
  strictEqual(podQOSClass(pod), "BestEffort");
  pod.spec.containers[0]!.resources = { limits: { cpu: "1", memory: "128Mi" } };
  strictEqual(podQOSClass(pod), "Guaranteed");
  pod.spec.containers[0]!.resources = {
    limits: { cpu: "500m", memory: "134217728" },
    requests: { cpu: "0.5", memory: "128Mi" },
  };
  strictEqual(podQOSClass(pod), "Guaranteed");
  pod.spec.containers[0]!.resources = { requests: { cpu: "100m" } };
  strictEqual(podQOSClass(pod), "Burstable");
  pod.spec.containers[0]!.resources = {
    limits: { cpu: "1", memory: "1Gi" },
    requests: { cpu: "1", memory: "512Mi" },
  };
  strictEqual(podQOSClass(pod), "Burstable");
  pod.spec.containers[0]!.resources = { limits: { cpu: "1", memory: "1Gi" } };
  // Every container, init ones too, needs cpu and memory limits to be Guaranteed.
  pod.spec.initContainers = [{ name: "i", resources: { requests: { cpu: "0" } } }];
  strictEqual(podQOSClass(pod), "Burstable");
  pod.spec.initContainers = [{ name: "i", resources: { limits: { cpu: "1000m", memory: "1Gi" } } }];
  strictEqual(podQOSClass(pod), "Guaranteed");
});

/** A pod with one app container and the given init containers ("sc…" are sidecars). */
function podWithInits(names: string[]): Pod {
  const pod = basePod(["app"]);
  pod.spec.initContainers = names.map((name) => ({
    name,
    image: `img-${name}`,
    ...(name.startsWith("sc") ? { restartPolicy: "Always" as const } : {}),
  }));
  return pod;
}

Deno.test("generatePodStatus() shows a failing init container as Error, then CrashLoopBackOff", () => {
  const pod = podWithInits(["setup"]);
  const failed = exited(containerAt(pod, 0, true), 1, { restartCount: 1 });
  const first = gen(pod, [failed]);
  strictEqual(first.phase, "Pending");
  strictEqual(cs(first, "setup").state.terminated?.reason, "Error");
  deepStrictEqual(cs(first, "app").state, { waiting: { reason: "PodInitializing" } });
  const backoff: ContainerInBackoff = {
    name: "setup",
    reason: "CrashLoopBackOff",
    message: "back-off 10s restarting failed container=setup pod=web_default(u1)",
    until: NOW + 10_000,
  };
  const held = gen(pod, [failed], { inBackoff: [backoff] });
  strictEqual(held.phase, "Pending");
  deepStrictEqual(cs(held, "setup").state, {
    waiting: { reason: "CrashLoopBackOff", message: backoff.message },
  });
  strictEqual(cs(held, "setup").lastState.terminated?.reason, "Error");
  strictEqual(cs(held, "setup").restartCount, 1);
  const init = cond(held, "Initialized");
  strictEqual(init.reason, "ContainersNotInitialized");
  strictEqual(init.message, "containers with incomplete status: [setup]");
});

Deno.test("generatePodStatus() shows a completed init container as Completed and the next as running", () => {
  const pod = podWithInits(["one", "two"]);
  const s = gen(pod, [instance(containerAt(pod, 1, true)), exited(containerAt(pod, 0, true), 0)]);
  strictEqual(s.phase, "Pending");
  strictEqual(cs(s, "one").state.terminated?.reason, "Completed");
  strictEqual(cs(s, "one").ready, true);
  ok(cs(s, "two").state.running);
  strictEqual(cs(s, "two").ready, false);
  strictEqual(cond(s, "Initialized").message, "containers with incomplete status: [two]");
});

Deno.test("generatePodStatus() reports an OOM-killed container's reason", () => {
  const pod = basePod(["app"]);
  pod.spec.restartPolicy = "Never";
  const s = gen(pod, [exited(containerAt(pod, 0), 137, { reason: "OOMKilled" })]);
  strictEqual(s.phase, "Failed");
  strictEqual(cs(s, "app").state.terminated?.reason, "OOMKilled");
  strictEqual(cs(s, "app").state.terminated?.exitCode, 137);
});

Deno.test("generatePodStatus() marks a container started only once its startup probe succeeded", () => {
  const pod = basePod(["app"]);
  pod.spec.containers[0]!.startupProbe = { exec: { command: ["true"] } };
  const c = instance(containerAt(pod, 0));
  const pending = gen(pod, [c]);
  strictEqual(cs(pending, "app").started, false);
  strictEqual(cs(pending, "app").ready, false, "not ready before started");
  const started = gen(pod, [c], { startup: new Map([[c.id, "success" as const]]) });
  strictEqual(cs(started, "app").started, true);
  strictEqual(cs(started, "app").ready, true);
  const failing = gen(pod, [c], {
    startup: new Map([[c.id, "failure" as const]]),
    readiness: new Map([[c.id, true]]),
  });
  strictEqual(cs(failing, "app").started, false);
  strictEqual(cs(failing, "app").ready, false);
});

Deno.test("generatePodStatus() keeps a pod initializing until its sidecar is started", () => {
  const pod = podWithInits(["sc-proxy"]);
  pod.spec.initContainers![0]!.startupProbe = { exec: { command: ["true"] } };
  const sidecar = instance(containerAt(pod, 0, true));
  const s = gen(pod, [sidecar]);
  strictEqual(s.phase, "Pending");
  strictEqual(cs(s, "sc-proxy").started, false);
  strictEqual(cond(s, "Initialized").message, "containers with incomplete status: [sc-proxy]");
  deepStrictEqual(cs(s, "app").state, { waiting: { reason: "PodInitializing" } });
  const up = gen(pod, [sidecar], { startup: new Map([[sidecar.id, "success" as const]]) });
  strictEqual(cs(up, "sc-proxy").started, true);
  strictEqual(cs(up, "sc-proxy").ready, true);
  strictEqual(cond(up, "Initialized").status, "True");
});

Deno.test("generatePodStatus() counts a sidecar's readiness in ContainersReady", () => {
  const pod = podWithInits(["sc-proxy"]);
  pod.spec.initContainers![0]!.readinessProbe = { exec: { command: ["true"] } };
  const sidecar = instance(containerAt(pod, 0, true));
  const app = instance(containerAt(pod, 0));
  const s = gen(pod, [app, sidecar], { readiness: new Map([[sidecar.id, false]]) });
  strictEqual(s.phase, "Running");
  strictEqual(cs(s, "sc-proxy").ready, false);
  strictEqual(cond(s, "ContainersReady").message, "containers with unready status: [sc-proxy]");
  const ready = gen(pod, [app, sidecar], { readiness: new Map([[sidecar.id, true]]) });
  strictEqual(cond(ready, "ContainersReady").status, "True");
});

Deno.test("generatePodStatus() shows a crash-looping sidecar as CrashLoopBackOff even with restartPolicy Never", () => {
  const pod = podWithInits(["sc-proxy"]);
  pod.spec.restartPolicy = "Never";
  const backoff: ContainerInBackoff = {
    name: "sc-proxy",
    reason: "CrashLoopBackOff",
    message: "back-off 20s restarting failed container=sc-proxy pod=web_default(u1)",
    until: NOW + 20_000,
  };
  const s = gen(pod, [instance(containerAt(pod, 0)), exited(containerAt(pod, 0, true), 2)], {
    inBackoff: [backoff],
  });
  strictEqual(s.phase, "Running");
  strictEqual(cs(s, "sc-proxy").state.waiting?.reason, "CrashLoopBackOff");
  strictEqual(cs(s, "sc-proxy").lastState.terminated?.exitCode, 2);
  strictEqual(cond(s, "Initialized").status, "True", "app containers ran: stays initialized");
});

Deno.test("generatePodStatus() keeps a Job-like pod Running while its sidecar runs, Succeeded once stopped", () => {
  for (const policy of ["Never", "OnFailure"] as const) {
    const pod = podWithInits(["sc-proxy"]);
    pod.spec.restartPolicy = policy;
    const done = exited(containerAt(pod, 0), 0);
    const running = gen(pod, [done, instance(containerAt(pod, 0, true))]);
    strictEqual(running.phase, "Running", policy);
    const stopped = gen(pod, [done, exited(containerAt(pod, 0, true), 143)]);
    strictEqual(stopped.phase, "Succeeded", policy);
    strictEqual(cond(stopped, "Ready").reason, "PodCompleted");
  }
});

Deno.test("generatePodStatus() fails a Job-like pod whose app container failed, whatever its sidecar did", () => {
  const pod = podWithInits(["sc-proxy"]);
  pod.spec.restartPolicy = "Never";
  const s = gen(pod, [exited(containerAt(pod, 0), 1), exited(containerAt(pod, 0, true), 137)]);
  strictEqual(s.phase, "Failed");
});

/** A pod running its app containers, with ephemeral containers `dbg-*` added. */
function debuggedPod(names: string[]): Pod {
  const pod = basePod();
  pod.spec.ephemeralContainers = names.map((name) => ({
    name,
    image: "busybox",
    targetContainerName: "a",
  }));
  return pod;
}

function ecs(status: PodStatus, name: string): ContainerStatus {
  const c = status.ephemeralContainerStatuses?.find((x) => x.name === name);
  if (!c) throw new Error(`no ephemeral status for ${name}`);
  return c;
}

Deno.test("generatePodStatus() reports ephemeral containers sorted by name, never ready", () => {
  const pod = debuggedPod(["dbg-z", "dbg-a"]);
  const [z, a] = pod.spec.ephemeralContainers!;
  const s = gen(pod, [instance(z!), exited(a!, 0), ...allRunning(pod)]);
  deepStrictEqual(s.ephemeralContainerStatuses?.map((x) => x.name), ["dbg-a", "dbg-z"]);
  const running = ecs(s, "dbg-z");
  deepStrictEqual(running.state, { running: { startedAt: "2026-01-01T00:01:00Z" } });
  strictEqual(running.ready, false);
  strictEqual(running.started, undefined);
  strictEqual(ecs(s, "dbg-a").state.terminated?.exitCode, 0);
  ok(!(s.containerStatuses ?? []).some((x) => x.name.startsWith("dbg")));
});

Deno.test("generatePodStatus() does not count ephemeral containers for phase or readiness", () => {
  const pod = debuggedPod(["dbg"]);
  pod.spec.restartPolicy = "Never";
  const dbg = pod.spec.ephemeralContainers![0]!;
  const running = gen(pod, [exited(dbg, 1), ...allRunning(pod)]);
  strictEqual(running.phase, "Running");
  strictEqual(cond(running, "Ready").status, "True");
  const done = gen(pod, [instance(dbg), ...pod.spec.containers.map((c) => exited(c, 0))]);
  strictEqual(done.phase, "Succeeded");
});

Deno.test("generatePodStatus() shows an exited ephemeral container terminated, not waiting to restart", () => {
  const pod = debuggedPod(["dbg"]);
  const dbg = pod.spec.ephemeralContainers![0]!;
  const s = gen(pod, [exited(dbg, 2), ...allRunning(pod)], {
    lastErrors: new Map([["dbg", { reason: "RunContainerError", message: "old" }]]),
  });
  strictEqual(ecs(s, "dbg").state.terminated?.exitCode, 2);
  strictEqual(ecs(s, "dbg").restartCount, 0);
});

Deno.test("generatePodStatus() shows why an ephemeral container could not start", () => {
  const pod = debuggedPod(["dbg"]);
  const s = gen(pod, allRunning(pod), {
    lastErrors: new Map([["dbg", {
      reason: "ErrImageNeverPull",
      message: 'Container image "busybox" is not present with pull policy of Never',
    }]]),
  });
  deepStrictEqual(ecs(s, "dbg").state, {
    waiting: {
      reason: "ErrImageNeverPull",
      message: 'Container image "busybox" is not present with pull policy of Never',
    },
  });
  strictEqual(s.phase, "Running");
});

Deno.test("generatePodStatus() leaves ephemeralContainerStatuses out of a pod without any", () => {
  const pod = basePod();
  strictEqual(gen(pod, allRunning(pod)).ephemeralContainerStatuses, undefined);
});

Deno.test("generatePodStatus() fails a pod a sync handler evicts, with its reason and message", () => {
  const pod = basePod();
  const evict = {
    reason: "DeadlineExceeded",
    message: "Pod was active on the node longer than the specified deadline",
  };
  const s = gen(pod, allRunning(pod), { evict });
  strictEqual(s.phase, "Failed");
  strictEqual(s.reason, evict.reason);
  strictEqual(s.message, evict.message);
  strictEqual(cond(s, "Ready").reason, "PodFailed");
  // The apiserver's terminal phase still wins over the eviction.
  pod.status = { phase: "Succeeded" };
  strictEqual(gen(pod, allRunning(pod), { evict }).phase, "Succeeded");
});

Deno.test("pastActiveDeadline() counts from the status startTime, inclusive, and needs both fields", () => {
  const pod = basePod();
  const status: PodStatus = { startTime: "2026-01-01T00:00:00Z" };
  const start = T("2026-01-01T00:00:00Z");
  strictEqual(pastActiveDeadline(pod, status, start + 3_600_000), false, "no deadline");
  pod.spec.activeDeadlineSeconds = 5;
  strictEqual(pastActiveDeadline(pod, status, start + 4_999), false);
  strictEqual(pastActiveDeadline(pod, status, start + 5_000), true);
  strictEqual(pastActiveDeadline(pod, {}, start + 60_000), false, "not started");
  strictEqual(pastActiveDeadline(pod, undefined, start + 60_000), false);
});

Deno.test("generatePodStatus() holds Ready False until every readiness gate's condition is True", () => {
  const pod = basePod();
  pod.spec.readinessGates = [{ conditionType: "example.com/feature-1" }, {
    conditionType: "example.com/feature-2",
  }];
  const containers = allRunning(pod);
  const missing = gen(pod, containers);
  strictEqual(cond(missing, "ContainersReady").status, "True");
  deepStrictEqual(
    [cond(missing, "Ready").status, cond(missing, "Ready").reason, cond(missing, "Ready").message],
    [
      "False",
      "ReadinessGatesNotReady",
      'corresponding condition of pod readiness gate "example.com/feature-1" does not exist., ' +
      'corresponding condition of pod readiness gate "example.com/feature-2" does not exist.',
    ],
  );
  const gate = (type: string, status: PodCondition["status"]): PodCondition => ({
    type,
    status,
    lastProbeTime: null,
    lastTransitionTime: "2026-01-01T00:00:00Z",
  });
  pod.status = {
    conditions: [gate("example.com/feature-1", "True"), gate("example.com/feature-2", "False")],
  };
  const half = gen(pod, containers);
  strictEqual(
    cond(half, "Ready").message,
    'the status of pod readiness gate "example.com/feature-2" is not "True", but False',
  );
  // The gates' conditions are others': kept as they are, before the kubelet's own.
  deepStrictEqual(half.conditions?.slice(0, 2), pod.status.conditions);
  pod.status.conditions![1]!.status = "True";
  const ready = gen(pod, containers);
  strictEqual(cond(ready, "Ready").status, "True");
  strictEqual(cond(ready, "Ready").reason, undefined);
});

Deno.test("generatePodStatus() reports unready containers, not gates, while the containers are unready", () => {
  const pod = basePod(["a"]);
  pod.spec.readinessGates = [{ conditionType: "example.com/gate" }];
  pod.spec.containers[0]!.readinessProbe = { exec: { command: ["true"] } };
  const s = gen(pod, allRunning(pod));
  strictEqual(cond(s, "Ready").reason, "ContainersNotReady");
  strictEqual(cond(s, "Ready").message, "containers with unready status: [a]");
});

Deno.test("StatusManager keeps the times of conditions others set as they are", () => {
  const statuses = new StatusManager({ clock, logger: silentLogger });
  const pod = basePod(["a"]);
  pod.spec.readinessGates = [{ conditionType: "example.com/gate" }];
  const theirs: PodCondition = { type: "example.com/gate", status: "False" };
  pod.status = { conditions: [theirs] };
  statuses.setPodStatus(pod, gen(pod, allRunning(pod)));
  pod.status = { conditions: [{ type: "example.com/gate", status: "True" }] };
  statuses.setPodStatus(pod, gen(pod, allRunning(pod)));
  const gate = statuses.getPodStatus(pod.metadata.uid!)?.conditions?.find((c) =>
    c.type === "example.com/gate"
  );
  deepStrictEqual(gate, { type: "example.com/gate", status: "True" });
  strictEqual(cond(statuses.getPodStatus(pod.metadata.uid!)!, "Ready").status, "True");
});

Deno.test("generatePodStatus() stamps every kubelet condition with the pod's generation", () => {
  const pod = basePod();
  pod.metadata.generation = 3;
  pod.status = {
    conditions: [{ type: "example.com/gate", status: "True", observedGeneration: 1 }],
  };
  const s = gen(pod, allRunning(pod));
  deepStrictEqual(
    s.conditions?.map((c) => `${c.type}@${c.observedGeneration}`),
    [
      // Another component's condition keeps the generation it observed.
      "example.com/gate@1",
      "PodReadyToStartContainers@3",
      "Initialized@3",
      "Ready@3",
      "ContainersReady@3",
      "PodScheduled@3",
    ],
  );
  delete pod.metadata.generation;
  ok(gen(pod, allRunning(pod)).conditions?.every((c) => c.observedGeneration !== 3));
});
