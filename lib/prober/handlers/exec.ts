/**
 * The exec probe: the command runs in the container through CRI ExecSync with
 * the probe's timeout, as upstream's exec prober: exit 0 is success, any
 * other exit a failure, and a timeout a failure too (ExecProbeTimeout, on
 * since 1.20). Any other runtime error means the probe could not run.
 *
 * @module
 */

import type { ExecAction } from "../../api/types.ts";
import { isDeadlineExceeded } from "../../cri/mod.ts";
// env.ts alone: the expansion rules, without the runtime manager behind kuberuntime/mod.ts.
import { expandVars } from "../../kuberuntime/env.ts";
import type { ProbeOutcome, ProbeTarget } from "../types.ts";

/** Upstream keeps at most 10 KiB of a probe's output. */
export const MAX_PROBE_OUTPUT_BYTES = 10 * 1024;

const decoder = new TextDecoder();

/**
 * `$(VAR)` in the command, from the container's env vars that have a literal
 * value only (upstream's ExpandContainerCommandOnlyStatic): the probe has no
 * access to the downward API or to secrets.
 */
function expandStatic(command: string[], target: ProbeTarget): string[] {
  const env = new Map<string, string>();
  for (const e of target.container.env ?? []) {
    if (e.valueFrom === undefined) env.set(e.name, e.value ?? "");
  }
  return command.map((c) => expandVars(c, (name) => env.get(name)));
}

function combinedOutput(stdout: Uint8Array, stderr: Uint8Array): string {
  const both = new Uint8Array(Math.min(stdout.length + stderr.length, MAX_PROBE_OUTPUT_BYTES));
  both.set(stdout.subarray(0, both.length));
  if (stdout.length < both.length) {
    both.set(stderr.subarray(0, both.length - stdout.length), stdout.length);
  }
  return decoder.decode(both);
}

/**
 * Runs an exec probe once.
 * @param action the probe's exec action
 * @param target the container
 * @param timeoutSeconds the probe's timeout (ExecSync's timeout)
 * @param signal cancels the call (the worker stopped)
 * @returns the outcome; never throws
 */
export async function execProbe(
  action: ExecAction,
  target: ProbeTarget,
  timeoutSeconds: number,
  signal: AbortSignal,
): Promise<ProbeOutcome> {
  const command = expandStatic(action.command ?? [], target);
  try {
    const res = await target.runtime.execSync(target.containerId, command, timeoutSeconds, {
      signal,
    });
    const output = combinedOutput(res.stdout, res.stderr);
    return { result: res.exitCode === 0 ? "success" : "failure", output };
  } catch (err) {
    if (isDeadlineExceeded(err)) {
      return {
        result: "failure",
        output: `command ${JSON.stringify(command.join(" "))} timed out`,
      };
    }
    const message = err instanceof Error ? err.message : String(err);
    return {
      result: "unknown",
      output: `exec probe in container "${target.container.name}" errored: ${message}`,
    };
  }
}
