/**
 * The fault suite's invariants (issue #17), checked after every fault and recovery
 * against the runtime's own view (CRI list calls) and the apiserver's:
 *
 * - no container twice: one container per pod UID, container name and attempt, and
 *   at most one running per pod UID and name;
 * - no ready sandbox and no running container of a pod the apiserver no longer has
 *   (after a bound), no container or sandbox of a deleted pod left after the garbage
 *   collector's bound, and a deleted pod's API object gone;
 * - no spurious restart: the healthy pods of a {@link Baseline} keep their container
 *   IDs and restart counts, in the API and in the runtime;
 * - the API status says what the runtime runs (running state and container ID, ready,
 *   phase Running, the Ready condition), within 30 s;
 * - no mount under and no directory of a gone pod in `<rootDir>/pods`, and the agent's
 *   open file descriptors bounded.
 *
 * A deleted pod's container the runtime refuses to remove is a finding about the runtime,
 * reported apart from the violations, when the agent's log shows the runtime refusing it
 * the removal and the runtime refuses the checker's own RemoveContainer the same way
 * (containerd 1.6.20 keeps a container whose start a dropped call cancelled and answers
 * "cannot delete running task" to everyone); its sandbox, which the GC leaves while it
 * holds a container, goes with it. A leftover whose removal by the agent a fault cut
 * (the call reset or timed out) gets one more GC period from the end of the faults: a
 * fault that went on past the collection bound may have cut every pass before. Any other
 * leftover stays a violation.
 *
 * The rules are pure functions over a {@link Observation} (unit-tested in
 * tests/unit/fault_invariants_test.ts); {@link checkInvariants} observes a
 * {@link TestNode} and polls until the converging ones hold.
 *
 * ```ts
 * const baseline = await snapshotBaseline(node, [steady]);
 * // ... a fault, a recovery ...
 * const violations = await checkInvariants(node, {
 *   namespaces: [steady, churned], baseline, deleted, seed,
 * });
 * assert.deepEqual(violations, [], `seed ${seed}: ${violations.join("\n")}`);
 * ```
 *
 * @module
 */

import type { Pod } from "../../lib/api/types.ts";
import {
  type Container,
  ContainerState,
  createRuntimeService,
  CriError,
  GrpcCode,
  type PodSandbox,
  PodSandboxState,
} from "../../lib/cri/mod.ts";
import { Labels } from "../../lib/kuberuntime/types.ts";
import { errorText } from "../../lib/util/log.ts";
import { mountPointsUnder, parseMountInfo } from "../../lib/volumes/mount.ts";
import { waitFor, WaitTimeoutError } from "../kit/wait.ts";
import { NODE, type TestNode } from "../e2e/_node.ts";

/** One container of a healthy pod, as the baseline saw it. */
export interface BaselineContainer {
  /** The runtime's ID (without the `containerd://` scheme). */
  id: string;
  restartCount: number;
}

/** The healthy pods at one moment: those that must not restart through a fault. */
export interface Baseline {
  /** By pod UID. */
  pods: Map<
    string,
    { namespace: string; name: string; containers: Map<string, BaselineContainer> }
  >;
}

/** A sandbox as the rules read it. */
export interface RuntimeSandbox {
  id: string;
  uid: string;
  namespace: string;
  name: string;
  ready: boolean;
}

/** A container as the rules read it. */
export interface RuntimeContainer {
  id: string;
  sandboxId: string;
  uid: string;
  namespace: string;
  podName: string;
  name: string;
  attempt: number;
  state: "created" | "running" | "exited" | "unknown";
}

/** What one pass of {@link checkInvariants} saw; the rules' input. */
export interface Observation {
  /** When it was taken (ms since the epoch). */
  now: number;
  /** The namespaces under test; pods elsewhere are only "known". */
  namespaces: readonly string[];
  sandboxes: RuntimeSandbox[];
  containers: RuntimeContainer[];
  /** Every pod bound to the node, in every namespace. */
  pods: Pod[];
  /** Deleted pods, `ns/name` → ms since the epoch. */
  deleted: ReadonlyMap<string, number>;
  /** Entries of `<rootDir>/pods`. */
  podDirs: string[];
  /** Mount points under `<rootDir>/pods`. */
  mountPoints: string[];
  rootDir: string;
  /** The agent's open file descriptors (undefined: the agent is not running). */
  fds: number | undefined;
}

/** Bounds of the rules. */
export interface InvariantBounds {
  /** After its deletion, a pod's grace period plus this: no running container, no API object. */
  deletedBoundMs: number;
  /** After its deletion, a pod's exited containers and sandboxes are collected within this. */
  collectedBoundMs: number;
  /**
   * From the end of the faults, a leftover whose removal a fault cut is collected within
   * this, even past `collectedBoundMs`.
   */
  cutRemovalBoundMs: number;
  /** The agent's open file descriptors at most. */
  maxFds: number;
}

/**
 * The defaults: 30 s after deletion (and, for a pod deleted lately, 30 s after the node
 * otherwise settled), 150 s for the GC (its period is 60 s) and 75 s past the faults for
 * a removal they cut (a period and a pass), 1024 fds.
 */
export const DEFAULT_BOUNDS: InvariantBounds = {
  deletedBoundMs: 30_000,
  collectedBoundMs: 150_000,
  cutRemovalBoundMs: 75_000,
  maxFds: 1024,
};

/** A finding: `hard` ones are facts a wait cannot undo (a container started twice). */
export interface Violation {
  hard: boolean;
  message: string;
  /** A deleted pod's container or sandbox the GC's bound did not see removed. */
  uncollected?: { kind: "container" | "sandbox"; id: string };
}

const STATES: Record<number, RuntimeContainer["state"]> = {
  [ContainerState.CONTAINER_CREATED]: "created",
  [ContainerState.CONTAINER_RUNNING]: "running",
  [ContainerState.CONTAINER_EXITED]: "exited",
};

/**
 * Reads CRI's listings by the labels the kubelet puts on them.
 * @param sandboxes ListPodSandbox's answer
 * @param containers ListContainers' answer
 */
export function runtimeView(
  sandboxes: readonly PodSandbox[],
  containers: readonly Container[],
): { sandboxes: RuntimeSandbox[]; containers: RuntimeContainer[] } {
  return {
    sandboxes: sandboxes.map((s) => ({
      id: s.id,
      uid: s.labels[Labels.podUID] ?? s.metadata.uid,
      namespace: s.labels[Labels.podNamespace] ?? s.metadata.namespace,
      name: s.labels[Labels.podName] ?? s.metadata.name,
      ready: s.state === PodSandboxState.SANDBOX_READY,
    })),
    containers: containers.map((c) => ({
      id: c.id,
      sandboxId: c.podSandboxId,
      uid: c.labels[Labels.podUID] ?? "",
      namespace: c.labels[Labels.podNamespace] ?? "",
      podName: c.labels[Labels.podName] ?? "",
      name: c.labels[Labels.containerName] ?? c.metadata.name,
      attempt: c.metadata.attempt,
      state: STATES[c.state] ?? "unknown",
    })),
  };
}

/** `containerd://abc` → `abc`. */
export function bareId(containerID: string | undefined): string | undefined {
  if (containerID === undefined || containerID === "") return undefined;
  const at = containerID.indexOf("://");
  return at < 0 ? containerID : containerID.slice(at + 3);
}

const key = (ns: string, name: string) => `${ns}/${name}`;

/**
 * No container twice: one per pod UID, name and attempt; one running per pod UID and name.
 */
export function duplicateViolations(o: Observation): Violation[] {
  const out: Violation[] = [];
  const attempts = new Map<string, string[]>();
  const running = new Map<string, string[]>();
  for (const c of o.containers) {
    if (!o.namespaces.includes(c.namespace)) continue;
    const at = `${c.uid}/${c.name}/${c.attempt}`;
    attempts.set(at, [...attempts.get(at) ?? [], c.id]);
    if (c.state === "running") {
      const rn = `${c.uid}/${c.name}`;
      running.set(rn, [...running.get(rn) ?? [], c.id]);
    }
  }
  const name = (ids: string[]) => {
    const c = o.containers.find((x) => x.id === ids[0])!;
    return `${key(c.namespace, c.podName)} container ${c.name}`;
  };
  for (const [at, ids] of attempts) {
    if (ids.length > 1) {
      out.push({
        hard: true,
        message: `${name(ids)} attempt ${at.split("/").pop()} created ${ids.length} times (${
          ids.join(", ")
        })`,
      });
    }
  }
  for (const ids of running.values()) {
    if (ids.length > 1) {
      out.push({
        hard: true,
        message: `${name(ids)} running ${ids.length} times (${ids.join(", ")})`,
      });
    }
  }
  return out;
}

/**
 * Nothing of a gone pod: no ready sandbox or running container of a pod the apiserver
 * does not have (its deletion's bound past), nothing at all once the GC's bound is past,
 * and a deleted pod's API object gone within the bound.
 */
export function orphanViolations(o: Observation, bounds: InvariantBounds): Violation[] {
  const out: Violation[] = [];
  const inApi = new Map(o.pods.map((p) => [p.metadata.uid ?? "", p]));
  const byName = new Map(
    o.pods.map((p) => [key(p.metadata.namespace ?? "", p.metadata.name ?? ""), p]),
  );
  const past = (ns: string, name: string, boundMs: number) => {
    const at = o.deleted.get(key(ns, name));
    // A pod nobody recorded deleting has no deadline of its own: the caller's poll is its bound.
    return at === undefined || o.now > at + boundMs;
  };
  for (const s of o.sandboxes) {
    if (!o.namespaces.includes(s.namespace) || inApi.has(s.uid)) continue;
    if (s.ready && past(s.namespace, s.name, bounds.deletedBoundMs)) {
      out.push({
        hard: false,
        message: `sandbox ${s.id} of gone pod ${key(s.namespace, s.name)} is ready`,
      });
    } else if (
      o.deleted.has(key(s.namespace, s.name)) && past(s.namespace, s.name, bounds.collectedBoundMs)
    ) {
      out.push({
        hard: false,
        message: `sandbox ${s.id} of deleted pod ${key(s.namespace, s.name)} not collected`,
        uncollected: { kind: "sandbox", id: s.id },
      });
    }
  }
  for (const c of o.containers) {
    if (!o.namespaces.includes(c.namespace) || inApi.has(c.uid)) continue;
    const pod = key(c.namespace, c.podName);
    if (c.state === "running" && past(c.namespace, c.podName, bounds.deletedBoundMs)) {
      out.push({
        hard: false,
        message: `container ${c.name} (${c.id}) of gone pod ${pod} is running`,
      });
    } else if (o.deleted.has(pod) && past(c.namespace, c.podName, bounds.collectedBoundMs)) {
      out.push({
        hard: false,
        message: `container ${c.name} (${c.id}) of deleted pod ${pod} not collected`,
        uncollected: { kind: "container", id: c.id },
      });
    }
  }
  for (const [pod, at] of o.deleted) {
    if (byName.has(pod) && o.now > at + bounds.deletedBoundMs) {
      out.push({
        hard: false,
        message: `deleted pod ${pod} still in the API ${Math.round((o.now - at) / 1000)} s later`,
      });
    }
  }
  return out;
}

/**
 * Deleted pods still in the API or running a container, whose bound has not passed yet:
 * what a check waits for before it calls the node settled.
 * @returns their `ns/name`s
 */
export function pendingDeletions(o: Observation, bounds: InvariantBounds): string[] {
  const present = new Set(
    o.pods.map((p) => key(p.metadata.namespace ?? "", p.metadata.name ?? "")),
  );
  for (const c of o.containers) {
    if (c.state === "running") present.add(key(c.namespace, c.podName));
  }
  return [...o.deleted].filter(([pod, at]) =>
    present.has(pod) && o.now <= at + bounds.deletedBoundMs
  )
    .map(([pod]) => pod);
}

function hasProbe(pod: Pod, name: string, kind: "readinessProbe" | "startupProbe"): boolean {
  return pod.spec.containers.some((c) => c.name === name && c[kind] !== undefined);
}

/**
 * The API status says what the runtime runs: a running container is `running` in the
 * API with its ID (and ready, without a readiness or startup probe) and its pod's phase
 * is Running; a container the API calls running runs; a Ready pod has every container
 * ready. Pods being deleted are left to {@link orphanViolations}.
 */
export function statusViolations(o: Observation): Violation[] {
  const out: Violation[] = [];
  for (const pod of o.pods) {
    const ns = pod.metadata.namespace ?? "";
    if (!o.namespaces.includes(ns) || pod.metadata.deletionTimestamp) continue;
    const uid = pod.metadata.uid ?? "";
    const name = key(ns, pod.metadata.name ?? "");
    const statuses = pod.status?.containerStatuses ?? [];
    const running = o.containers.filter((c) => c.uid === uid && c.state === "running");
    for (const c of running) {
      const st = statuses.find((s) => s.name === c.name);
      if (st?.state?.running === undefined || bareId(st.containerID) !== c.id) {
        out.push({
          hard: false,
          message: `${name} container ${c.name}: the runtime runs ${c.id}, the API says ${
            JSON.stringify({ id: bareId(st?.containerID), state: Object.keys(st?.state ?? {}) })
          }`,
        });
      } else if (
        !st.ready && pod.spec.containers.some((x) => x.name === c.name) &&
        !hasProbe(pod, c.name, "readinessProbe") && !hasProbe(pod, c.name, "startupProbe")
      ) {
        out.push({ hard: false, message: `${name} container ${c.name} runs but is not ready` });
      }
    }
    if (running.length > 0 && pod.status?.phase !== "Running") {
      out.push({
        hard: false,
        message: `${name} has running containers, phase ${pod.status?.phase}`,
      });
    }
    for (const st of statuses) {
      if (st.state?.running === undefined) continue;
      if (!running.some((c) => c.name === st.name && c.id === bareId(st.containerID))) {
        out.push({
          hard: false,
          message: `${name} container ${st.name}: the API says running ${
            bareId(st.containerID)
          }, the runtime does not run it`,
        });
      }
    }
    const ready = pod.status?.conditions?.find((c) => c.type === "Ready")?.status === "True";
    if (ready && statuses.some((s) => !s.ready)) {
      out.push({ hard: false, message: `${name} is Ready with a container not ready` });
    }
  }
  return out;
}

/**
 * No spurious restart: each baseline pod is still there with the same container IDs
 * and restart counts, in the API and in the runtime.
 */
export function restartViolations(o: Observation, baseline: Baseline): Violation[] {
  const out: Violation[] = [];
  for (const [uid, want] of baseline.pods) {
    const name = key(want.namespace, want.name);
    const pod = o.pods.find((p) => p.metadata.uid === uid);
    if (pod === undefined) {
      out.push({ hard: true, message: `healthy pod ${name} (${uid}) is gone from the API` });
      continue;
    }
    for (const [cname, was] of want.containers) {
      const st = pod.status?.containerStatuses?.find((s) => s.name === cname);
      const id = bareId(st?.containerID);
      if (st !== undefined && id !== undefined && id !== was.id) {
        out.push({
          hard: true,
          message: `healthy pod ${name} container ${cname} restarted: ${was.id} → ${id}`,
        });
      } else if (st !== undefined && st.restartCount !== was.restartCount) {
        out.push({
          hard: true,
          message:
            `healthy pod ${name} container ${cname} restartCount ${was.restartCount} → ${st.restartCount}`,
        });
      } else if (st === undefined || id === undefined) {
        out.push({ hard: false, message: `healthy pod ${name} container ${cname} has no status` });
      }
      const rt = o.containers.find((c) => c.id === was.id);
      if (rt?.state !== "running") {
        out.push({
          hard: rt !== undefined,
          message: `healthy pod ${name} container ${cname} (${was.id}) is ${
            rt?.state ?? "gone"
          } in the runtime`,
        });
      }
      const others = o.containers.filter((c) =>
        c.uid === uid && c.name === cname && c.id !== was.id && c.state === "running"
      );
      for (const c of others) {
        out.push({
          hard: true,
          message: `healthy pod ${name} container ${cname} has a second running container ${c.id}`,
        });
      }
    }
  }
  return out;
}

/** API UIDs (RFC 4122) as `<rootDir>/pods` names them. */
const UID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * No leftovers of gone pods under `<rootDir>/pods` (a pod is known while the apiserver
 * has it, as a mirror pod's source, or the runtime has anything of it), and the agent's
 * file descriptors bounded.
 */
export function leftoverViolations(o: Observation, bounds: InvariantBounds): Violation[] {
  const out: Violation[] = [];
  const known = new Set<string>();
  for (const p of o.pods) {
    known.add(p.metadata.uid ?? "");
    const mirror = p.metadata.annotations?.["kubernetes.io/config.mirror"];
    if (mirror !== undefined) known.add(mirror);
  }
  for (const s of o.sandboxes) known.add(s.uid);
  for (const c of o.containers) known.add(c.uid);
  const podsDir = `${o.rootDir.replace(/\/+$/, "")}/pods/`;
  for (const dir of o.podDirs) {
    if (UID.test(dir) && !known.has(dir)) {
      out.push({ hard: false, message: `pod dir ${podsDir}${dir} of a gone pod` });
    }
  }
  for (const m of o.mountPoints) {
    if (!m.startsWith(podsDir)) continue;
    const uid = m.slice(podsDir.length).split("/")[0] ?? "";
    if (!known.has(uid)) out.push({ hard: false, message: `mount ${m} of a gone pod` });
  }
  if (o.fds === undefined) {
    out.push({ hard: true, message: "the agent is not running" });
  } else if (o.fds > bounds.maxFds) {
    out.push({ hard: false, message: `the agent holds ${o.fds} fds (bound ${bounds.maxFds})` });
  }
  return out;
}

/**
 * Whether the agent's log shows the runtime refusing it the removal of `id`
 * (FailedPrecondition, the code containerd answers "cannot delete running task" with).
 * @param log the agent's log
 * @param id the container's ID
 */
export function agentWasRefused(log: string, id: string): boolean {
  return log.split("\n").some((l) => l.includes(id) && l.includes("code = FailedPrecondition"));
}

/**
 * Whether the agent's log shows its removal of `id` failing on the transport (Unavailable:
 * a reset or a runtime gone; DeadlineExceeded: a stall), as the faults cut calls.
 * @param log the agent's log
 * @param id the container's or sandbox's ID
 */
export function agentRemovalWasCut(log: string, id: string): boolean {
  return log.split("\n").some((l) =>
    l.includes(id) && /Failed to remove|Removal failed/.test(l) &&
    /code = (Unavailable|DeadlineExceeded)/.test(l)
  );
}

/**
 * The sandboxes that hold one of `containers`: the GC keeps a sandbox while it holds a
 * container, as upstream's does.
 * @param o what was seen
 * @param containers container IDs
 * @returns sandbox IDs
 */
export function sandboxesHolding(o: Observation, containers: ReadonlySet<string>): Set<string> {
  return new Set(o.containers.filter((c) => containers.has(c.id)).map((c) => c.sandboxId));
}

/**
 * Every rule over one observation.
 * @param o what was seen
 * @param baseline healthy pods that must not restart
 * @param bounds see {@link InvariantBounds}
 */
export function violationsOf(
  o: Observation,
  baseline: Baseline | undefined,
  bounds: InvariantBounds = DEFAULT_BOUNDS,
): Violation[] {
  return [
    ...duplicateViolations(o),
    ...orphanViolations(o, bounds),
    ...statusViolations(o),
    ...(baseline ? restartViolations(o, baseline) : []),
    ...leftoverViolations(o, bounds),
  ];
}

/** Every pod bound to the node, through the admin kubeconfig. */
async function nodePods(node: TestNode): Promise<Pod[]> {
  const list = await node.cluster.kubectlJson<{ items: Pod[] }>([
    ...["get", "pods", "--all-namespaces", "--field-selector", `spec.nodeName=${NODE}`],
  ]);
  return list.items;
}

async function dirNames(dir: string): Promise<string[]> {
  const names: string[] = [];
  try {
    for await (const e of Deno.readDir(dir)) names.push(e.name);
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
  return names;
}

async function fdCount(pid: number): Promise<number | undefined> {
  try {
    return (await dirNames(`/proc/${pid}/fd`)).length;
  } catch {
    return undefined;
  }
}

/**
 * Looks at the node once: CRI's sandboxes and containers, the API's pods, the agent's
 * pod dirs, mounts and fds.
 */
export async function observe(
  node: TestNode,
  namespaces: readonly string[],
  deleted: ReadonlyMap<string, number>,
): Promise<Observation> {
  const cri = createRuntimeService({ endpoint: node.runtime.endpoint, timeoutMs: 30_000 });
  let view;
  try {
    view = runtimeView(await cri.listPodSandbox(), await cri.listContainers());
  } finally {
    cri.close();
  }
  const pods = await nodePods(node);
  const rootDir = node.agent.rootDir;
  const mounts = parseMountInfo(await Deno.readTextFile("/proc/self/mountinfo"));
  return {
    now: Date.now(),
    namespaces,
    ...view,
    pods,
    deleted,
    podDirs: await dirNames(`${rootDir}/pods`),
    mountPoints: mountPointsUnder(mounts, `${rootDir}/pods`),
    rootDir,
    fds: await fdCount(node.agent.pid),
  };
}

/**
 * Records the healthy pods of `namespaces`: Running, every container ready, with their
 * container IDs and restart counts.
 * @param node the node under test
 * @param namespaces where the pods that must survive every fault live
 */
export async function snapshotBaseline(node: TestNode, namespaces: string[]): Promise<Baseline> {
  const pods = new Map<
    string,
    { namespace: string; name: string; containers: Map<string, BaselineContainer> }
  >();
  for (const pod of await nodePods(node)) {
    const ns = pod.metadata.namespace ?? "";
    const statuses = pod.status?.containerStatuses ?? [];
    if (
      !namespaces.includes(ns) || pod.metadata.deletionTimestamp ||
      pod.status?.phase !== "Running" || statuses.length === 0 ||
      !statuses.every((s) => s.ready && s.state?.running !== undefined)
    ) continue;
    pods.set(pod.metadata.uid ?? "", {
      namespace: ns,
      name: pod.metadata.name ?? "",
      containers: new Map(statuses.map((s) => [s.name, {
        id: bareId(s.containerID) ?? "",
        restartCount: s.restartCount,
      }])),
    });
  }
  return { pods };
}

/** Options of {@link checkInvariants}. */
export interface CheckInvariantsOptions {
  /** The namespaces whose pods are checked. */
  namespaces: string[];
  /** Healthy pods that must not have restarted. */
  baseline?: Baseline;
  /** Deleted pods, `ns/name` → ms since the epoch. */
  deleted?: Map<string, number>;
  /** Named in every violation, so a failure can be replayed. */
  seed: number;
  /** How long the converging rules may take (default 30 s). */
  convergeMs?: number;
  bounds?: Partial<InvariantBounds>;
  /** Counts added to, so a report can say how much was compared. */
  tally?: InvariantTally;
  /**
   * Leftovers the runtime refused to remove to the agent and to the checker, added to:
   * findings about the runtime, not violations (see the module's doc). Without it they
   * are violations.
   */
  refusals?: string[];
}

/** What {@link checkInvariants} compared, summed over calls. */
export interface InvariantTally {
  /** Observations taken (each one a full pass of the rules). */
  passes: number;
  /** Of each call's last observation: API pods, CRI sandboxes and containers in the namespaces. */
  pods: number;
  sandboxes: number;
  containers: number;
  /** Of each call's last observation: mount points under `<rootDir>/pods`, and the agent's fds (the largest). */
  mounts: number;
  maxFds: number;
}

/**
 * Checks every invariant, polling up to `convergeMs` for the converging ones (status,
 * orphans, leftovers); a hard violation (a container started twice, a restart) seen in
 * any pass stays reported. Once the rest holds, pods deleted less than `deletedBoundMs`
 * ago that are still there get that long again to go: a fault that lands in a
 * termination starts it over.
 * @param node the node under test
 * @param opts see {@link CheckInvariantsOptions}
 * @returns the violations, each prefixed with the seed; [] when clean
 */
export async function checkInvariants(
  node: TestNode,
  opts: CheckInvariantsOptions,
): Promise<string[]> {
  const bounds = { ...DEFAULT_BOUNDS, ...opts.bounds };
  const faultsEnded = Date.now();
  const hard = new Set<string>();
  let soft: Violation[] = [];
  let last: Observation | undefined;
  let passes = 0;
  const pass = async () => {
    let found: Violation[];
    try {
      const o = await observe(node, opts.namespaces, opts.deleted ?? new Map());
      last = o;
      found = violationsOf(o, opts.baseline, bounds);
    } catch (err) {
      found = [{ hard: false, message: `cannot observe the node: ${(err as Error).message}` }];
    }
    passes++;
    for (const v of found) if (v.hard) hard.add(v.message);
    soft = found.filter((v) => !v.hard);
    return soft.length === 0;
  };
  const settle = async (what: string, done: () => Promise<boolean>, timeoutMs: number) => {
    await waitFor(what, done, { timeoutMs, intervalMs: 500 }).catch((err) => {
      if (!(err instanceof WaitTimeoutError)) throw err;
    });
  };
  await settle("the invariants to hold", pass, opts.convergeMs ?? 30_000);
  // Clean, but pods deleted lately may still be terminating (a fault restarts their
  // termination): give them their bound from now, then each one left is a violation.
  const waiting = last && soft.length === 0 ? pendingDeletions(last, bounds) : [];
  const late: string[] = [];
  if (waiting.length > 0) {
    const since = Date.now();
    let left = waiting;
    await settle("the deleted pods to go", async () => {
      const clean = await pass();
      left = last ? pendingDeletions(last, bounds).filter((p) => waiting.includes(p)) : left;
      return clean && left.length === 0;
    }, bounds.deletedBoundMs);
    late.push(
      ...left.map((p) =>
        `deleted pod ${p} still there ${
          Math.round((Date.now() - (opts.deleted?.get(p) ?? since)) / 1000)
        } s after its deletion, ${Math.round((Date.now() - since) / 1000)} s after the node settled`
      ),
    );
  }
  // Leftovers whose removal a fault cut: the GC's first pass after the faults removes them.
  const log = node.log();
  const cut = new Set(
    soft.flatMap((v) =>
      v.uncollected && agentRemovalWasCut(log, v.uncollected.id) ? [v.uncollected.id] : []
    ),
  );
  if (cut.size > 0) {
    await settle("the GC's pass after the faults", async () => {
      await pass();
      return !soft.some((v) => v.uncollected && cut.has(v.uncollected.id));
    }, Math.max(0, faultsEnded + bounds.cutRemovalBoundMs - Date.now()));
  }
  // Without a list to report them in, refused leftovers stay violations.
  const refused = last === undefined || opts.refusals === undefined
    ? new Map<Violation, string>()
    : await runtimeRefusals(node, last, soft.filter((v) => v.uncollected !== undefined));
  opts.refusals?.push(...[...refused.values()].map((m) => `seed ${opts.seed}: ${m}`));
  if (opts.tally !== undefined) {
    const t = opts.tally;
    const here = (ns: string) => opts.namespaces.includes(ns);
    t.passes += passes;
    t.pods += last?.pods.filter((p) => here(p.metadata.namespace ?? "")).length ?? 0;
    t.sandboxes += last?.sandboxes.filter((s) => here(s.namespace)).length ?? 0;
    t.containers += last?.containers.filter((c) => here(c.namespace)).length ?? 0;
    t.mounts += last?.mountPoints.length ?? 0;
    t.maxFds = Math.max(t.maxFds, last?.fds ?? 0);
  }
  const left = soft.filter((v) => !refused.has(v)).map((v) => v.message);
  return [...hard, ...left, ...late].map((m) => `seed ${opts.seed}: ${m}`);
}

/**
 * Of a deleted pod's leftovers, those the runtime refuses to remove to the agent and to
 * the checker, which asks the runtime itself; a removal that succeeds leaves the
 * violation standing, saying so. A sandbox holding a refused container goes with it.
 * @param node the node under test
 * @param o the last observation
 * @param leftovers its uncollected violations (their messages may gain what the checker saw)
 * @returns a finding for each refused one, by its violation
 */
async function runtimeRefusals(
  node: TestNode,
  o: Observation,
  leftovers: Violation[],
): Promise<Map<Violation, string>> {
  const out = new Map<Violation, string>();
  const containers = leftovers.filter((v) => v.uncollected?.kind === "container");
  if (containers.length === 0) return out;
  const log = node.log();
  const refused = new Set<string>();
  const cri = createRuntimeService({ endpoint: node.runtime.endpoint, timeoutMs: 30_000 });
  try {
    for (const v of containers) {
      const id = v.uncollected!.id;
      if (!agentWasRefused(log, id)) continue;
      try {
        await cri.removeContainer(id);
        v.message += "; the runtime removed it when the checker asked";
      } catch (err) {
        if (err instanceof CriError && err.code === GrpcCode.FAILED_PRECONDITION) {
          refused.add(id);
          out.set(
            v,
            `${v.message}: the runtime refuses its removal to the agent and to the checker (${err.details})`,
          );
        } else {
          v.message += `; the checker's RemoveContainer: ${errorText(err)}`;
        }
      }
    }
  } finally {
    cri.close();
  }
  const held = sandboxesHolding(o, refused);
  for (const v of leftovers) {
    if (v.uncollected?.kind === "sandbox" && held.has(v.uncollected.id)) {
      out.set(v, `${v.message}: it holds a container the runtime refuses to remove`);
    }
  }
  return out;
}
