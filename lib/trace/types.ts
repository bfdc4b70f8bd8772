/**
 * The JSON shapes of the sync trace, as `/debug/pods/{namespace}/{name}/syncs`
 * serves them. Plain data: no methods, no I/O. The shape is a contract (the
 * `/ui` page and `denolet explain` read it): add fields, never rename them.
 *
 * ```
 * PodSyncTrace {
 *   pod: "ns/name", uid, depth,          // depth: how many syncs are kept
 *   syncs: SyncRecord[]                  // oldest first, at most depth
 * }
 * SyncRecord {
 *   seq, kind: "sync"|"terminating"|"terminated"|"runtime-kill",
 *   startedAt, endedAt,                  // epoch ms (endedAt absent while running)
 *   triggers: [{ at, source, detail }],  // why it ran (coalesced: all since the last sync)
 *   plan?: { killPod, createSandbox, start[], kill[{name,reason,message}],
 *            backoff[{name,reason,message,until}], update[], reasons[] },
 *   calls: [{ at, rpc, args, ms, error? }],   // every CRI call made by the sync
 *   steps: [{ action, target, error?: {reason,message} }],
 *   status?: { phase, reason?, containers: [{ name, state, reason?, exitCode?, restartCount }] },
 *   error?: string,                       // the sync's own error, if it failed
 *   truncated?: number                    // calls dropped over the per-sync cap
 * }
 * ```
 *
 * @module
 */

/** What woke the pod's worker. */
export type TriggerSource =
  /** A config change: ADD, UPDATE, RECONCILE, DELETE, REMOVE (detail: the source). */
  | "config"
  /** A PLEG event (detail: its type and container). */
  | "pleg"
  /** A probe result changed (detail: probe, container, result). */
  | "probe"
  /** The sync tick found the pod due: periodic resync or retry after an error. */
  | "resync"
  /** The resync's due pod had a container whose CrashLoopBackOff has expired. */
  | "backoff-expired"
  /** Past activeDeadlineSeconds. */
  | "deadline"
  /** A kill: deletion, eviction, orphan clean-up (detail says which). */
  | "kill"
  /** Any other caller (in-place resize retries). */
  | "other";

/** One reason a sync ran. */
export interface SyncTrigger {
  /** Epoch ms. */
  at: number;
  source: TriggerSource;
  detail: string;
}

/** One CRI call made during the sync. */
export interface RuntimeCallRecord {
  /** Epoch ms when it started. */
  at: number;
  /** The RuntimeService method (`createContainer`, `pullImage`, ...). */
  rpc: string;
  /** Key arguments: container/sandbox ids, container name, image. */
  args: string;
  /** Duration in ms, to the tenth. */
  ms: number;
  /** The error's text when it failed. */
  error?: string;
}

/** The plan `computePodActions` produced, by container name, with why. */
export interface PlanRecord {
  killPod: boolean;
  createSandbox: boolean;
  /** Containers started by this sync (init, ephemeral and app, in that order). */
  start: string[];
  kill: { name: string; reason: string; message: string }[];
  backoff: { name: string; reason: string; message: string; until: number }[];
  /** Containers resized in place. */
  update: string[];
  /** One line per decision: why the pod/sandbox is killed or made, why each start. */
  reasons: string[];
}

/** One step the executor carried out (volumes, sandbox, image, container, hooks). */
export interface StepRecord {
  action: string;
  target: string;
  error?: { reason: string; message: string };
}

/** A container as the status written by the sync shows it. */
export interface ContainerStatusRecord {
  name: string;
  state: "waiting" | "running" | "terminated" | "unknown";
  reason?: string;
  message?: string;
  exitCode?: number;
  restartCount: number;
  /** The previous instance's exit code, when it has one. */
  lastExitCode?: number;
}

/** The status the sync wrote. */
export interface StatusRecord {
  phase: string;
  reason?: string;
  message?: string;
  containers: ContainerStatusRecord[];
}

/** What a sync of the pod's worker does. */
export type SyncKind = "sync" | "terminating" | "terminated" | "runtime-kill";

/** One sync of one pod. */
export interface SyncRecord {
  /** Increasing per agent process. */
  seq: number;
  kind: SyncKind;
  startedAt: number;
  endedAt?: number;
  triggers: SyncTrigger[];
  plan?: PlanRecord;
  calls: RuntimeCallRecord[];
  steps: StepRecord[];
  status?: StatusRecord;
  error?: string;
  /** Runtime calls not recorded because the sync made more than the cap. */
  truncated?: number;
}

/** The body of `/debug/pods/{namespace}/{name}/syncs`. */
export interface PodSyncTrace {
  /** `namespace/name`. */
  pod: string;
  uid: string;
  /** How many syncs are kept per pod (`--sync-trace-depth`). */
  depth: number;
  /** Oldest first. */
  syncs: SyncRecord[];
}
