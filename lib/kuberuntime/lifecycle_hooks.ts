/**
 * Runs postStart and preStop handlers (exec, httpGet, sleep), as upstream's
 * pkg/kubelet/lifecycle handlers: exec through CRI ExecSync, httpGet against
 * the pod IP with the probe's request and Go-rules client (lib/probe), sleep
 * on the injected clock. Also the step actions and reasons that report hook
 * outcomes, so the caller can turn them into events.
 *
 * @module
 */

import { formatPod } from "../api/pod.ts";
import type { Container, HTTPGetAction, LifecycleHandler, Pod } from "../api/types.ts";
import type { RuntimeService } from "../cri/types.ts";
import {
  buildHttpProbeRequest,
  type HttpProbeRequest,
  kubeUserAgent,
  sendHttpGet,
} from "../probe/mod.ts";
import type { Clock } from "../util/clock.ts";
import { joinHostPort } from "../util/net.ts";

/**
 * SyncStep actions that report a hook's outcome (for events; they never fail a
 * sync). A `LifecycleHTTPFallback` step, whose target is the hook's host:port,
 * says an HTTPS httpGet hook was answered in plain HTTP and passed over HTTP.
 */
export const HookAction = {
  postStart: "PostStartHook",
  preStop: "PreStopHook",
  httpFallback: "LifecycleHTTPFallback",
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
 * @returns true for PostStartHook, PreStopHook and LifecycleHTTPFallback steps
 */
export function isHookStep(step: { action: string }): boolean {
  return step.action === HookAction.postStart || step.action === HookAction.preStop ||
    step.action === HookAction.httpFallback;
}

/** What a hook that passed has to report. */
export interface HookOutcome {
  /**
   * The host:port of an HTTPS httpGet hook that was answered in plain HTTP and
   * passed on the retry over HTTP (upstream's LifecycleHTTPFallback event).
   */
  httpFallback?: string;
}

/**
 * The steps that report a hook which passed: its own, after a
 * LifecycleHTTPFallback step when it fell back to HTTP.
 * @param action the hook's step action
 * @param container the container
 * @param outcome what the hook reported
 * @returns the steps, in the order their events go out
 */
export function hookPassedSteps(
  action: typeof HookAction.postStart | typeof HookAction.preStop,
  container: string,
  outcome: HookOutcome,
): { action: string; target: string }[] {
  const steps = [];
  if (outcome.httpFallback !== undefined) {
    steps.push({ action: HookAction.httpFallback, target: outcome.httpFallback });
  }
  steps.push({ action, target: container });
  return steps;
}

/** What a hook needs to reach its container. */
export interface HookTarget {
  runtime: RuntimeService;
  clock: Clock;
  containerId: string;
  container: Container;
  /** The pod's IP (the node's for host-network pods); "" when it has none. */
  podIP: string;
  /** The pod, named in failure messages as upstream names it. */
  pod?: Pod;
  /** Called when an HTTPS httpGet hook passed over HTTP (upstream's fallback metric). */
  onHttpFallback?: () => void;
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
 * @returns what a passed hook has to report
 * @throws {HookError} when the handler fails or times out
 */
export async function runLifecycleHandler(
  target: HookTarget,
  handler: LifecycleHandler,
  timeoutSeconds: number,
  signal?: AbortSignal,
): Promise<HookOutcome> {
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
    return {};
  }
  if (handler.httpGet) {
    try {
      return await runHttpHandler(target, handler.httpGet, timeoutSeconds, signal);
    } catch (err) {
      throw new HookError(
        `HTTP lifecycle hook (${handler.httpGet.path ?? ""}) ${where} failed - error: ${
          errorText(err)
        }`,
        { cause: err },
      );
    }
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
    return {};
  }
  throw new HookError(`Cannot run handler: invalid handler: ${JSON.stringify(handler)}`);
}

const never = new AbortController().signal;

/**
 * Upstream's runHTTPHandler: the probe's request with user agent
 * `kube-lifecycle/…`, sent by the hook client; any response passes, whatever
 * its status. An HTTPS request answered in plain HTTP ("server gave HTTP
 * response to HTTPS client") is sent again over HTTP without its
 * Authorization header, and passes if that gets a response; otherwise the
 * HTTPS error stands.
 * @throws {Error} with Go's `Get "<url>": <why>` when no response came
 */
async function runHttpHandler(
  target: HookTarget,
  action: HTTPGetAction,
  timeoutSeconds: number,
  signal: AbortSignal | undefined,
): Promise<HookOutcome> {
  const podIP = action.host || target.podIP;
  if (!podIP) throw new Error("failed to find networking container: the pod has no IP");
  const request = buildHttpProbeRequest(
    action,
    target.container,
    podIP,
    kubeUserAgent("lifecycle"),
  );
  // One budget for the hook, the retry over HTTP included.
  const endsAt = performance.now() + timeoutSeconds * 1000;
  const send = (req: HttpProbeRequest) =>
    sendHttpGet(req, {
      client: "hook",
      timeoutMs: Math.max(0, endsAt - performance.now()),
      signal: signal ?? never,
    });
  const res = await send(request);
  if (res.kind === "response") return {};
  if (res.kind === "error" && res.schemeMismatch) {
    const retry = overHttp(request);
    if ((await send(retry.request)).kind === "response") {
      target.onHttpFallback?.();
      return { httpFallback: retry.address };
    }
  }
  throw new Error(
    res.kind === "error" ? res.message : `Get ${goQuote(request.url.href)}: context canceled`,
  );
}

/**
 * The request again over HTTP, to the same host and port, without its
 * Authorization; and that host:port, as Go's `req.URL.Host` names it.
 */
function overHttp(request: HttpProbeRequest): { request: HttpProbeRequest; address: string } {
  const { protocol, hostname, port, pathname, search } = request.url;
  // A URL leaves out its scheme's default port; Go's URL here always names the port.
  const address = joinHostPort(
    hostname.replace(/^\[(.*)\]$/, "$1"),
    Number(port || (protocol === "https:" ? 443 : 80)),
  );
  const headers = new Map(request.headers);
  headers.delete("Authorization");
  const url = new URL(`http://${address}${pathname}${search}`);
  return { request: { url, headers, host: request.host }, address };
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
