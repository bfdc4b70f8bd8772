/**
 * The values the prober passes around: probe kinds, one probe's outcome,
 * what a handler needs to reach its container, and the results the planner
 * and status generation read.
 *
 * @module
 */

import type { Container, Probe } from "../api/types.ts";
import type { RuntimeService } from "../cri/types.ts";

/** Which of a container's probes; spelled as upstream's `probe_type` metric label. */
export type ProbeType = "Liveness" | "Readiness" | "Startup";

/**
 * One probe's outcome, as a handler reports it:
 * - `success` / `failure`: the verdict (a timeout is a failure);
 * - `unknown`: the probe could not be run at all (no such port name, the
 *   runtime failed the exec): upstream's "probe errored", whose result is
 *   thrown away rather than counted against the container.
 */
export type ProbeResultKind = "success" | "failure" | "unknown";

/** What a handler returns. Handlers never throw. */
export interface ProbeOutcome {
  result: ProbeResultKind;
  /** Output for logs and events: body, command output, or what went wrong. */
  output: string;
}

/** A liveness or startup verdict, as the planner reads it (same as kuberuntime's `ProbeResult`). */
export type ProbeVerdict = "success" | "failure";

/** What a handler needs to probe one container once. */
export interface ProbeTarget {
  /** The pod, for messages. */
  podName: string;
  /** The container's spec (ports by name, env for `$(VAR)` in exec commands). */
  container: Container;
  /** The CRI container id (exec). */
  containerId: string;
  /** The pod IP, the node IP for host-network pods (httpGet/tcpSocket/grpc default host). */
  podIP: string;
  /** Sent by httpGet (unless the probe sets its own) and grpc, e.g. `kube-probe/1.34`. */
  userAgent: string;
  /** Runs exec probes. */
  runtime: RuntimeService;
}

/**
 * Runs one probe once. Must settle within about `timeoutSeconds` (plus the
 * runtime's own deadline for exec), must honour `signal`, and never throws.
 */
export type ProbeRunner = (
  probe: Probe,
  target: ProbeTarget,
  signal: AbortSignal,
) => Promise<ProbeOutcome>;

/** A cached result that changed (upstream's results-manager update). */
export interface ProbeResultUpdate {
  podUID: string;
  /** Container name. */
  container: string;
  /** CRI container id (without a `containerd://` prefix). */
  containerId: string;
  probeType: ProbeType;
  /** The new cached result. */
  result: ProbeVerdict | "unknown";
  /** The cached result before, undefined when this container had none (a new container). */
  previous: ProbeVerdict | "unknown" | undefined;
  /**
   * The probe's `terminationGracePeriodSeconds`, which overrides the pod's for
   * the kill that a liveness/startup failure causes.
   */
  terminationGracePeriodSeconds?: number;
  /** The handler's output that produced this result ("" for initial values). */
  output: string;
}

/** Upstream's probe defaults (pkg/apis/core/v1/defaults.go SetDefaults_Probe). */
export const PROBE_DEFAULTS = {
  timeoutSeconds: 1,
  periodSeconds: 10,
  successThreshold: 1,
  failureThreshold: 3,
  initialDelaySeconds: 0,
} as const;

/** A probe with its defaults filled in. */
export interface ProbeTiming {
  initialDelaySeconds: number;
  timeoutSeconds: number;
  periodSeconds: number;
  successThreshold: number;
  failureThreshold: number;
}

/**
 * Fills upstream's defaults into a probe's timing fields. Zero or negative
 * values take the default, as API defaulting plus validation leave them
 * (validation rejects successThreshold ≠ 1 for liveness and startup; we
 * force 1 there rather than refuse the pod).
 * @param probe the probe from the spec
 * @param type which probe it is
 * @returns the effective timing
 */
export function probeTiming(probe: Probe, type: ProbeType): ProbeTiming {
  const positive = (v: number | undefined, d: number) =>
    v !== undefined && Number.isFinite(v) && v > 0 ? Math.floor(v) : d;
  return {
    initialDelaySeconds: Math.max(0, Math.floor(probe.initialDelaySeconds ?? 0)) || 0,
    timeoutSeconds: positive(probe.timeoutSeconds, PROBE_DEFAULTS.timeoutSeconds),
    periodSeconds: positive(probe.periodSeconds, PROBE_DEFAULTS.periodSeconds),
    successThreshold: type === "Readiness"
      ? positive(probe.successThreshold, PROBE_DEFAULTS.successThreshold)
      : 1,
    failureThreshold: positive(probe.failureThreshold, PROBE_DEFAULTS.failureThreshold),
  };
}

/** A probe's current result for display (the node page): one per probe worker. */
export interface ProbeResultView {
  /** Container name. */
  container: string;
  probeType: ProbeType;
  /**
   * The published result for the container's current instance; "unknown" before it
   * has one (not probed yet, an undecided startup probe, no instance).
   */
  result: ProbeResultKind;
  /** The handler's output that produced it ("" for initial values). */
  output: string;
}
