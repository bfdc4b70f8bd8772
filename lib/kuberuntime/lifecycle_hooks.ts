/**
 * Runs postStart and preStop handlers (exec, httpGet, sleep), as upstream's
 * pkg/kubelet/lifecycle handlers: exec through CRI ExecSync, httpGet against
 * the pod IP, sleep on the injected clock. Also the step actions and reasons
 * that report hook outcomes, so the caller can turn them into events.
 *
 * @module
 */

import { formatPod } from "../api/pod.ts";
import type { Container, LifecycleHandler, Pod } from "../api/types.ts";
import type { RuntimeService } from "../cri/types.ts";
import type { Clock } from "../util/clock.ts";

/** SyncStep actions that report a hook's outcome (for events; they never fail a sync). */
export const HookAction = {
  postStart: "PostStartHook",
  preStop: "PreStopHook",
} as const;

/** Upstream's event reasons and sync error for failed hooks. */
export const HookReason = {
  /** Event reason when postStart fails; also the kill reason of the container. */
  failedPostStart: "FailedPostStartHook",
  /** Event reason when preStop fails. */
  failedPreStop: "FailedPreStopHook",
  /** Upstream `ErrPostStartHook`: the StartContainer result's error. */
  postStartHookError: "PostStartHookError",
} as const;

/**
 * Whether a step only reports a hook's outcome: a failed one is worth an
 * event but is not a failed sync (the StartContainer step says that).
 * @param step a sync step
 * @returns true for PostStartHook and PreStopHook steps
 */
export function isHookStep(step: { action: string }): boolean {
  return step.action === HookAction.postStart || step.action === HookAction.preStop;
}

/** What a hook needs to reach its container. */
export interface HookTarget {
  runtime: RuntimeService;
  clock: Clock;
  containerId: string;
  container: Container;
  /** The pod's IP (the node's for host-network pods). */
  podIP: string;
  /** The pod, named in failure messages as upstream names it. */
  pod?: Pod;
}

/** A hook failed; the message is upstream's handler-runner message. */
export class HookError extends Error {
  /**
   * @param message what failed, naming the container and pod
   * @param options the underlying error
   */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "HookError";
  }
}

function resolvePort(container: Container, port: number | string): number {
  if (typeof port === "number") return port;
  if (/^\d+$/.test(port)) return Number(port);
  const named = container.ports?.find((p) => p.name === port);
  if (!named) throw new Error(`container "${container.name}" has no port named "${port}"`);
  return named.containerPort;
}

/** Go's `%q` of a string, near enough for messages (JSON escaping). */
function goQuote(text: string): string {
  return JSON.stringify(text);
}

/**
 * Runs one lifecycle handler to completion or until `timeoutSeconds`.
 *
 * Failure messages are upstream's (pkg/kubelet/lifecycle/handlers.go), e.g.
 * `Exec lifecycle hook ([sh -c exit 3]) for Container "app" in Pod
 * "web_default(uid)" failed - error: command 'sh -c exit 3' exited with 3: ,
 * message: ""`. As upstream, an httpGet hook fails only when no response
 * arrives; the status code is not checked.
 * @param target the container and how to reach it
 * @param handler the handler from the spec
 * @param timeoutSeconds the most time it may take
 * @param signal cancels the handler
 * @throws {HookError} when the handler fails or times out
 */
export async function runLifecycleHandler(
  target: HookTarget,
  handler: LifecycleHandler,
  timeoutSeconds: number,
  signal?: AbortSignal,
): Promise<void> {
  const where = `for Container ${goQuote(target.container.name)} in Pod ${
    goQuote(target.pod ? formatPod(target.pod) : "")
  }`;
  if (handler.exec) {
    const cmd = handler.exec.command ?? [];
    let res;
    try {
      res = await target.runtime.execSync(target.containerId, cmd, timeoutSeconds, {
        timeoutMs: (timeoutSeconds + 5) * 1000,
        ...(signal ? { signal } : {}),
      });
    } catch (err) {
      throw new HookError(
        `Exec lifecycle hook ([${cmd.join(" ")}]) ${where} failed - error: ${
          errorText(err)
        }, message: ""`,
        { cause: err },
      );
    }
    if (res.exitCode !== 0) {
      const stderr = new TextDecoder().decode(res.stderr);
      const output = new TextDecoder().decode(res.stdout) + stderr;
      throw new HookError(
        `Exec lifecycle hook ([${cmd.join(" ")}]) ${where} failed - error: command '${
          cmd.join(" ")
        }' exited with ${res.exitCode}: ${stderr}, message: ${goQuote(output)}`,
      );
    }
    return;
  }
  if (handler.httpGet) {
    const h = handler.httpGet;
    const path = h.path ?? "";
    try {
      const port = resolvePort(target.container, h.port);
      const host = h.host || target.podIP || "127.0.0.1";
      const scheme = (h.scheme ?? "HTTP").toLowerCase();
      const url = `${scheme}://${host.includes(":") ? `[${host}]` : host}:${port}${
        path.startsWith("/") ? path : `/${path}`
      }`;
      const timeout = AbortSignal.timeout(timeoutSeconds * 1000);
      const headers = new Headers((h.httpHeaders ?? []).map((x) => [x.name, x.value]));
      const res = await fetch(url, {
        headers,
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
      await res.body?.cancel();
    } catch (err) {
      throw new HookError(
        `HTTP lifecycle hook (${path}) ${where} failed - error: ${errorText(err)}`,
        { cause: err },
      );
    }
    return;
  }
  if (handler.sleep) {
    const seconds = handler.sleep.seconds;
    try {
      await target.clock.sleep(Math.min(seconds, timeoutSeconds) * 1000, signal);
    } catch (err) {
      throw new HookError(
        `Sleep lifecycle hook (${seconds}) ${where} failed - error: container terminated before sleep hook finished`,
        { cause: err },
      );
    }
    return;
  }
  throw new HookError(`Cannot run handler: invalid handler: ${JSON.stringify(handler)}`);
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
