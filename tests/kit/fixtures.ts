/**
 * The pods, runtime views, machines and probe results most unit tests start from. Each
 * builder fills every required field with a neutral value and takes overrides, so that a
 * test states only what its case is about.
 *
 * @module
 */

import type { Container, ExecAction, ObjectMeta, Pod, PodSpec } from "../../lib/api/types.ts";
import { hashContainer } from "../../lib/kuberuntime/hash.ts";
import type {
  PodActions,
  RuntimeContainer,
  RuntimePodStatus,
  RuntimeSandbox,
} from "../../lib/kuberuntime/types.ts";
import type { ProbeResultUpdate } from "../../lib/prober/mod.ts";
import type { MachineInfo } from "../../lib/stats/mod.ts";

/** Options for {@link testPod}. */
export interface TestPodOptions {
  /** Default "web". */
  name?: string;
  /** Default "default". */
  namespace?: string;
  /** Default "u1". */
  uid?: string;
  /**
   * The app containers: a name stands for `{ name, image: "busybox" }`. Default one
   * container, "main".
   */
  containers?: (string | Container)[];
  /** More metadata (labels, annotations, resourceVersion...). */
  metadata?: Partial<ObjectMeta>;
  /** More spec (restartPolicy, initContainers, volumes...). */
  spec?: Partial<PodSpec>;
}

/**
 * A pod: "default/web", uid "u1", one busybox container "main", unless told otherwise.
 *
 * @param options name, namespace, uid, containers and any further metadata or spec
 */
export function testPod(options: TestPodOptions = {}): Pod {
  const containers = (options.containers ?? ["main"]).map((c) =>
    typeof c === "string" ? { name: c, image: "busybox" } : c
  );
  return {
    metadata: {
      name: options.name ?? "web",
      namespace: options.namespace ?? "default",
      uid: options.uid ?? "u1",
      ...options.metadata,
    },
    spec: { containers, ...options.spec },
  };
}

/**
 * A ready sandbox "sb1" on the pod network with no IP yet, created at epoch ms 1.
 *
 * @param overrides the fields the test cares about
 */
export function runtimeSandbox(overrides: Partial<RuntimeSandbox> = {}): RuntimeSandbox {
  return {
    id: "sb1",
    state: "ready",
    attempt: 0,
    createdAt: 1,
    ip: "",
    additionalIps: [],
    hostNetwork: false,
    ...overrides,
  };
}

/**
 * The running instance of `spec` in sandbox "sb1": id `<name>-id`, the spec's image and
 * hash, never restarted, created and started at epoch ms 0.
 *
 * @param spec the container it runs
 * @param overrides the fields the test cares about
 */
export function runtimeContainer(
  spec: Container,
  overrides: Partial<RuntimeContainer> = {},
): RuntimeContainer {
  return {
    id: `${spec.name}-id`,
    sandboxId: "sb1",
    name: spec.name,
    state: "running",
    createdAt: 0,
    startedAt: 0,
    finishedAt: 0,
    exitCode: 0,
    reason: "",
    message: "",
    image: spec.image ?? "",
    imageRef: "sha256:abc",
    restartCount: 0,
    hash: hashContainer(spec),
    ...overrides,
  };
}

/**
 * An exited instance of `spec` ({@link runtimeContainer}), with CRI's reason for
 * `exitCode`: "Completed" for 0, "Error" otherwise.
 *
 * @param spec the container it ran
 * @param exitCode how it exited
 * @param overrides the fields the test cares about (finishedAt, reason...)
 */
export function exitedContainer(
  spec: Container,
  exitCode: number,
  overrides: Partial<RuntimeContainer> = {},
): RuntimeContainer {
  return runtimeContainer(spec, {
    state: "exited",
    exitCode,
    reason: exitCode === 0 ? "Completed" : "Error",
    ...overrides,
  });
}

/**
 * What the runtime holds for a pod: "default/web", uid "u1", one {@link runtimeSandbox}
 * and no containers, unless told otherwise.
 *
 * @param overrides the fields the test cares about
 */
export function runtimePodStatus(overrides: Partial<RuntimePodStatus> = {}): RuntimePodStatus {
  return {
    uid: "u1",
    name: "web",
    namespace: "default",
    sandboxes: [runtimeSandbox()],
    containers: [],
    ...overrides,
  };
}

/**
 * The plan that changes nothing in sandbox "sb1", plus overrides.
 *
 * @param overrides what the plan does
 */
export function podActions(overrides: Partial<PodActions> = {}): PodActions {
  return {
    killPod: false,
    createSandbox: false,
    sandboxId: "sb1",
    attempt: 0,
    initContainersToStart: [],
    containersToStart: [],
    ephemeralContainersToStart: [],
    containersToKill: [],
    inBackoff: [],
    ...overrides,
  };
}

/**
 * The machine a node status is computed from: 2 cores, 4 GiB of memory, 100 GiB of
 * ephemeral storage, no hugepages, linux/amd64 on Debian 12, machine ID "m-1", boot ID
 * "boot-1", unless told otherwise.
 *
 * @param overrides the fields the test cares about
 */
export function testMachineInfo(overrides: Partial<MachineInfo> = {}): MachineInfo {
  return {
    numCores: 2,
    memoryCapacityBytes: 4 * 2 ** 30,
    bootTimeMs: 0,
    ephemeralStorageCapacityBytes: 100 * 2 ** 30,
    hugepages: [],
    machineID: "m-1",
    systemUUID: "",
    bootID: "boot-1",
    kernelVersion: "6.1.0",
    osImage: "Debian GNU/Linux 12 (bookworm)",
    operatingSystem: "linux",
    architecture: "amd64",
    ...overrides,
  };
}

/**
 * A prober's update: the readiness probe of container "main" (id "c1") in pod "u1" went
 * from failure to success, unless told otherwise.
 *
 * @param overrides the fields the test cares about (podUID, probeType, result...)
 */
export function probeResult(overrides: Partial<ProbeResultUpdate> = {}): ProbeResultUpdate {
  return {
    podUID: "u1",
    container: "main",
    containerId: "c1",
    probeType: "Readiness",
    result: "success",
    previous: "failure",
    output: "",
    ...overrides,
  };
}

/**
 * A probe's or hook's exec handler that runs `script` with `sh -c`.
 *
 * @param script the shell script
 */
export function shellExec(script: string): { exec: ExecAction } {
  return { exec: { command: ["sh", "-c", script] } };
}

/**
 * The container of `pod` at `index` (init containers with `init`), failing loudly
 * instead of returning undefined.
 *
 * @param pod the pod
 * @param index its position in the spec
 * @param init whether to look in `spec.initContainers`
 * @throws Error naming the pod and position when there is none
 */
export function containerAt(pod: Pod, index: number, init = false): Container {
  const c = init ? pod.spec.initContainers?.[index] : pod.spec.containers[index];
  if (!c) {
    const list = init ? "initContainers" : "containers";
    throw new Error(`pod ${pod.metadata.name} has no ${list}[${index}]`);
  }
  return c;
}

/**
 * A pod for a real runtime (tests/harness): host network, so no traffic leaves the node;
 * a fresh random uid, so pods of one runtime never collide; a 1 s grace period; and
 * every container, init containers too, on `image` with `imagePullPolicy: Never` (the
 * harness loads its images locally) unless it says otherwise.
 *
 * @param image the image containers run by default (e.g. `rt.images.busybox`)
 * @param options as for {@link testPod}; its spec overrides the defaults above
 */
export function hostNetworkPod(image: string, options: TestPodOptions = {}): Pod {
  const local = (c: Container): Container => ({ image, imagePullPolicy: "Never", ...c });
  const pod = testPod({
    uid: crypto.randomUUID(),
    ...options,
    containers: (options.containers ?? ["main"]).map((c) =>
      local(typeof c === "string" ? { name: c } : c)
    ),
    spec: { hostNetwork: true, terminationGracePeriodSeconds: 1, ...options.spec },
  });
  if (pod.spec.initContainers) pod.spec.initContainers = pod.spec.initContainers.map(local);
  return pod;
}
