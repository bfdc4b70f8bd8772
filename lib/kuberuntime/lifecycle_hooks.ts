/**
 * Runs postStart and preStop handlers (exec, httpGet, sleep), as upstream's
 * pkg/kubelet/lifecycle handlers: exec through CRI ExecSync, httpGet against
 * the pod IP, sleep on the injected clock.
 *
 * @module
 */

import type { Container, LifecycleHandler } from "../api/types.ts";
import type { RuntimeService } from "../cri/types.ts";
import type { Clock } from "../util/clock.ts";

/** What a hook needs to reach its container. */
export interface HookTarget {
  runtime: RuntimeService;
  clock: Clock;
  containerId: string;
  container: Container;
  /** The pod's IP (the node's for host-network pods). */
  podIP: string;
}

/** A hook failed; the message is what upstream records in the event. */
export class HookError extends Error {
  /**
   * @param message what failed, naming the container
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
  if (!named) throw new HookError(`container "${container.name}" has no port named "${port}"`);
  return named.containerPort;
}

/**
 * Runs one lifecycle handler to completion or until `timeoutSeconds`.
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
  const name = target.container.name;
  if (handler.exec) {
    const cmd = handler.exec.command ?? [];
    let res;
    try {
      res = await target.runtime.execSync(target.containerId, cmd, timeoutSeconds, {
        timeoutMs: (timeoutSeconds + 5) * 1000,
        ...(signal ? { signal } : {}),
      });
    } catch (err) {
      throw new HookError(`exec hook ${JSON.stringify(cmd)} in container "${name}" failed`, {
        cause: err,
      });
    }
    if (res.exitCode !== 0) {
      const out = new TextDecoder().decode(res.stdout) + new TextDecoder().decode(res.stderr);
      throw new HookError(
        `exec hook ${
          JSON.stringify(cmd)
        } in container "${name}" exited ${res.exitCode}: ${out.trim()}`,
      );
    }
    return;
  }
  if (handler.httpGet) {
    const h = handler.httpGet;
    const port = resolvePort(target.container, h.port);
    const host = h.host || target.podIP || "127.0.0.1";
    const scheme = (h.scheme ?? "HTTP").toLowerCase();
    const path = h.path ?? "/";
    const url = `${scheme}://${host.includes(":") ? `[${host}]` : host}:${port}${
      path.startsWith("/") ? path : `/${path}`
    }`;
    const timeout = AbortSignal.timeout(timeoutSeconds * 1000);
    const headers = new Headers((h.httpHeaders ?? []).map((x) => [x.name, x.value]));
    let res: Response;
    try {
      res = await fetch(url, {
        headers,
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
      await res.body?.cancel();
    } catch (err) {
      throw new HookError(`http hook ${url} of container "${name}" failed`, { cause: err });
    }
    if (res.status < 200 || res.status >= 400) {
      throw new HookError(`http hook ${url} of container "${name}" returned ${res.status}`);
    }
    return;
  }
  if (handler.sleep) {
    await target.clock.sleep(Math.min(handler.sleep.seconds, timeoutSeconds) * 1000, signal);
    return;
  }
  throw new HookError(`lifecycle handler of container "${name}" names no action`);
}
