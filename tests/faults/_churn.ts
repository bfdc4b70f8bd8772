/**
 * A churn of pods through the apiserver, the load every fault of the fault suite lands
 * in (issue #17): creates, updates and deletes of pods bound to the node, one at a
 * time, at seeded random moments, until stopped.
 *
 * - creates: a plain busybox pod; one with emptyDir (disk and memory), configMap and
 *   secret volumes (the agent sets them up before the sandbox); or, when `pullImages`
 *   are given, one whose image the node has not pulled yet. Grace periods of 1-4 s, and
 *   `sleep` as PID 1 ignores SIGTERM, so each termination takes its full grace.
 * - updates: a label, an annotation, `activeDeadlineSeconds` (an hour, so it never
 *   fires) or the image (the busybox reference spelled long or short: the container's
 *   hash changes, so the agent restarts it).
 * - deletes: `kubectl delete --wait=false`, the moment recorded in `deletedAt`.
 *
 * Pod names are never reused, so `deletedAt` names one pod each.
 *
 * @module
 */

import type { Pod } from "../../lib/api/types.ts";
import { busyboxPod, type TestNode } from "../e2e/_node.ts";

/** What kind of pod a create made. */
export type ChurnFlavour = "plain" | "volumes" | "pull";

/** One operation of the churn, reported as it is sent. */
export interface ChurnOp {
  kind: "create" | "update" | "delete";
  /** The pod's name. */
  pod: string;
  flavour: ChurnFlavour;
  /** For an update: which field ("label", "annotation", "activeDeadlineSeconds", "image"). */
  field?: string;
  /** The grace period of the pod, in seconds. */
  grace: number;
}

/** Options of {@link startChurn}. */
export interface ChurnOptions {
  namespace: string;
  /** From seededRandom(seed): every choice (op, pod, pause) derives from it. */
  random: () => number;
  /** At most this many live pods (default 6). */
  maxPods?: number;
  /** Image references the node has not pulled: each is used by one "pull" create. */
  pullImages?: string[];
  /** The longest pause between two operations (default 600 ms). */
  maxPauseMs?: number;
  /** Called as each operation is sent (the fault tests pick their moments by it). */
  onOp?: (op: ChurnOp) => void;
}

/** What a churn did. */
export interface ChurnResult {
  created: number;
  updated: number;
  deleted: number;
  /** `ns/name` → ms since the epoch of each delete sent. */
  deletedAt: Map<string, number>;
  /** kubectl calls that failed (a pod already gone, the apiserver busy). */
  failed: number;
}

interface LivePod {
  name: string;
  flavour: ChurnFlavour;
  image: string;
  grace: number;
  deadlineSet: boolean;
}

let serial = 0;

/**
 * Starts the churn in `opts.namespace` (creating the ConfigMap and Secret its volume
 * pods mount first); `stop()` lets the operation in flight finish and resolves with
 * the figures.
 * @param node the node under test
 * @param opts see {@link ChurnOptions}
 */
export function startChurn(node: TestNode, opts: ChurnOptions): {
  stop(): Promise<ChurnResult>;
} {
  const { namespace: ns, random } = opts;
  const maxPods = opts.maxPods ?? 6;
  const maxPauseMs = opts.maxPauseMs ?? 600;
  const pulls = [...opts.pullImages ?? []];
  const c = node.cluster;
  const long = node.runtime.images.busybox;
  const short = long.replace(/^docker\.io\//, "");
  const live: LivePod[] = [];
  const result: ChurnResult = {
    created: 0,
    updated: 0,
    deleted: 0,
    deletedAt: new Map(),
    failed: 0,
  };
  let stopping = false;
  let wake: (() => void) | undefined;
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;

  const kubectl = async (args: string[], stdin?: string): Promise<boolean> => {
    const res = await c.kubectl(args, stdin === undefined ? {} : { stdin });
    if (res.code !== 0) result.failed++;
    return res.code === 0;
  };

  const create = async () => {
    const flavours: ChurnFlavour[] = [
      "plain",
      "volumes",
      ...(pulls.length > 0 ? ["pull" as const] : []),
    ];
    const flavour = pick(flavours);
    const name = `churn-${flavour}-${++serial}-${Math.floor(random() * 1e6)}`;
    const grace = 1 + Math.floor(random() * 4);
    const image = flavour === "pull" ? pulls.shift()! : pick([long, short]);
    const pod: Pod = busyboxPod(node.runtime, name, ns, {
      container: {
        image,
        imagePullPolicy: flavour === "pull" ? "IfNotPresent" : "Never",
        ...(flavour === "volumes"
          ? {
            volumeMounts: [
              { name: "scratch", mountPath: "/scratch" },
              { name: "memory", mountPath: "/memory" },
              { name: "config", mountPath: "/config" },
              { name: "secret", mountPath: "/secret" },
            ],
          }
          : {}),
      },
      spec: {
        terminationGracePeriodSeconds: grace,
        ...(flavour === "volumes"
          ? {
            volumes: [
              { name: "scratch", emptyDir: {} },
              { name: "memory", emptyDir: { medium: "Memory", sizeLimit: "8Mi" } },
              { name: "config", configMap: { name: "churn-config" } },
              { name: "secret", secret: { secretName: "churn-secret" } },
            ],
          }
          : {}),
      },
    });
    opts.onOp?.({ kind: "create", pod: name, flavour, grace });
    if (
      await kubectl(
        ["create", "-f", "-"],
        JSON.stringify({ apiVersion: "v1", kind: "Pod", ...pod }),
      )
    ) {
      result.created++;
      live.push({ name, flavour, image, grace, deadlineSet: false });
    }
  };

  const update = async (p: LivePod) => {
    const fields = [
      "label",
      "annotation",
      ...(p.deadlineSet ? [] : ["activeDeadlineSeconds"]),
      ...(p.flavour === "pull" ? [] : ["image"]),
    ];
    const field = pick(fields);
    opts.onOp?.({ kind: "update", pod: p.name, flavour: p.flavour, field, grace: p.grace });
    const value = String(Math.floor(random() * 1e6));
    let ok: boolean;
    if (field === "label") {
      ok = await kubectl(["label", "pod", "-n", ns, p.name, `churn=${value}`, "--overwrite"]);
    } else if (field === "annotation") {
      ok = await kubectl(["annotate", "pod", "-n", ns, p.name, `churn=${value}`, "--overwrite"]);
    } else if (field === "activeDeadlineSeconds") {
      ok = await kubectl([
        ...["patch", "pod", "-n", ns, p.name, "--type=merge"],
        `-p=${JSON.stringify({ spec: { activeDeadlineSeconds: 3600 } })}`,
      ]);
      if (ok) p.deadlineSet = true;
    } else {
      const image = p.image === long ? short : long;
      ok = await kubectl(["set", "image", "-n", ns, `pod/${p.name}`, `main=${image}`]);
      if (ok) p.image = image;
    }
    if (ok) result.updated++;
  };

  const remove = async (p: LivePod) => {
    opts.onOp?.({ kind: "delete", pod: p.name, flavour: p.flavour, grace: p.grace });
    live.splice(live.indexOf(p), 1);
    result.deletedAt.set(`${ns}/${p.name}`, Date.now());
    if (await kubectl(["delete", "pod", "-n", ns, p.name, "--wait=false"])) result.deleted++;
  };

  const loop = async () => {
    await kubectl([
      ...["create", "configmap", "churn-config", "-n", ns],
      "--from-literal=key=value",
    ]);
    await kubectl([
      ...["create", "secret", "generic", "churn-secret", "-n", ns],
      "--from-literal=password=s3cret",
    ]);
    while (!stopping) {
      const r = random();
      if (live.length === 0 || (live.length < maxPods && r < 0.45)) await create();
      else if (r < 0.75) await update(pick(live));
      else await remove(pick(live));
      // The pause between two operations is itself the random moment (no poll applies).
      const pause = Math.floor(random() * maxPauseMs);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, pause);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      wake = undefined;
    }
  };
  const running = loop();

  return {
    async stop() {
      stopping = true;
      wake?.();
      await running;
      return result;
    },
  };
}
