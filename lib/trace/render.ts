/**
 * A pod's sync trace as text, answer first: why the pod is not running (or
 * that it is), then the syncs as a timeline, newest last. Pure: the time and
 * the containers' last log lines are given.
 *
 * ```
 * default/web: not running because: CrashLoopBackOff, next start in 37 s (container main, restart 4, exit code 1, last log line: "boom")
 *
 * 05:21:03.120 sync #12 (340 ms) ← pleg: ContainerDied 3f2a…
 *   plan   start container main: exited with code 1 (Error), restart 4
 *   call   createContainer sandbox=… name=main image=busybox  12.3 ms
 *   status Running; main waiting CrashLoopBackOff (restart 4, last exit code 1)
 * ```
 *
 * @module
 */

import type { ContainerStatusRecord, PodSyncTrace, StatusRecord, SyncRecord } from "./types.ts";

/** What the answer needs besides the trace. */
export interface RenderOptions {
  /** Epoch ms: "next start in". */
  now: number;
  /** Per container name, its last log line (absent when not read). */
  lastLogLines?: ReadonlyMap<string, string>;
  /** Why the log lines could not be read, if they could not. */
  logProblem?: string;
}

/** `HH:MM:SS.mmm` in UTC. */
function clockTime(ms: number): string {
  return new Date(ms).toISOString().slice(11, 23);
}

/** The newest status any sync wrote. */
function latestStatus(trace: PodSyncTrace): StatusRecord | undefined {
  for (let i = trace.syncs.length - 1; i >= 0; i--) {
    const status = trace.syncs[i]!.status;
    if (status) return status;
  }
  return undefined;
}

/** When the newest plan that held `name` back lets it start again. */
function backoffUntil(trace: PodSyncTrace, name: string): number | undefined {
  for (let i = trace.syncs.length - 1; i >= 0; i--) {
    const plan = trace.syncs[i]!.plan;
    if (!plan) continue;
    const held = plan.backoff.find((b) => b.name === name);
    if (held) return held.until;
    if (plan.start.includes(name)) return undefined;
  }
  return undefined;
}

function exitCodeOf(c: ContainerStatusRecord): number | undefined {
  return c.exitCode ?? c.lastExitCode;
}

/** One container's "why", with its numbers. */
function containerWhy(
  trace: PodSyncTrace,
  c: ContainerStatusRecord,
  many: boolean,
  opts: RenderOptions,
): string {
  const details: string[] = [];
  if (many) details.push(`container ${c.name}`);
  details.push(`restart ${c.restartCount}`);
  const exit = exitCodeOf(c);
  if (exit !== undefined) details.push(`exit code ${exit}`);
  const line = opts.lastLogLines?.get(c.name);
  if (line !== undefined) details.push(`last log line: ${JSON.stringify(line)}`);
  else if (opts.logProblem) details.push(`last log line: ${opts.logProblem}`);
  let head = c.reason ?? (c.state === "terminated" ? "Terminated" : "Waiting");
  if (c.reason === "CrashLoopBackOff") {
    const until = backoffUntil(trace, c.name);
    if (until !== undefined) {
      head += `, next start in ${Math.max(0, Math.ceil((until - opts.now) / 1000))} s`;
    }
  } else if (c.message) {
    head += `: ${c.message}`;
  }
  return `${head} (${details.join(", ")})`;
}

/**
 * The answer line: why the pod is not running, or that it runs.
 * @param trace the pod's trace
 * @param opts the time and log lines
 * @returns one line starting with the pod's `namespace/name`
 */
export function explainAnswer(trace: PodSyncTrace, opts: RenderOptions): string {
  const status = latestStatus(trace);
  if (!status) {
    return `${trace.pod}: no status written yet (${trace.syncs.length} sync(s) recorded)`;
  }
  const notRunning = status.containers.filter((c) => c.state !== "running");
  const phase = status.phase;
  if (phase === "Succeeded" || phase === "Failed") {
    const why = status.reason
      ? `${phase} (${status.reason}${status.message ? `: ${status.message}` : ""})`
      : phase;
    const first = notRunning.find((c) => c.state === "terminated");
    return `${trace.pod}: not running because: pod ${why}${
      first ? `; ${containerWhy(trace, first, true, opts)}` : ""
    }`;
  }
  if (notRunning.length === 0 && status.containers.length > 0) {
    const restarts = status.containers.reduce((n, c) => n + c.restartCount, 0);
    return `${trace.pod}: running (${status.containers.length} container(s), ${restarts} restart(s), phase ${phase})`;
  }
  // The containers that explain the most first: backing off, then waiting, then the rest.
  const rank = (c: ContainerStatusRecord) =>
    c.reason === "CrashLoopBackOff" ? 0 : c.state === "waiting" ? 1 : 2;
  const ordered = [...notRunning].sort((a, b) => rank(a) - rank(b));
  const many = status.containers.length > 1;
  const whys = ordered.map((c) => containerWhy(trace, c, many, opts));
  return `${trace.pod}: not running because: ${whys.join("; ") || `phase ${phase}`}`;
}

function statusLine(status: StatusRecord): string {
  const containers = status.containers.map((c) => {
    const exit = c.exitCode !== undefined
      ? `, exit code ${c.exitCode}`
      : c.lastExitCode !== undefined
      ? `, last exit code ${c.lastExitCode}`
      : "";
    return `${c.name} ${c.state}${
      c.reason ? ` ${c.reason}` : ""
    } (restart ${c.restartCount}${exit})`;
  });
  return `${status.phase}${status.reason ? ` ${status.reason}` : ""}; ${containers.join("; ")}`;
}

/**
 * One sync as an indented block.
 * @param sync the record
 * @returns lines without a trailing newline
 */
export function renderSync(sync: SyncRecord): string[] {
  const took = sync.endedAt === undefined ? "running" : `${sync.endedAt - sync.startedAt} ms`;
  const why = sync.triggers.map((t) => `${t.source}: ${t.detail}`).join("; ");
  const lines = [`${clockTime(sync.startedAt)} ${sync.kind} #${sync.seq} (${took}) ← ${why}`];
  for (const reason of sync.plan?.reasons ?? []) lines.push(`  plan   ${reason}`);
  for (const call of sync.calls) {
    lines.push(
      `  call   ${call.rpc}${call.args ? ` ${call.args}` : ""}  ${call.ms} ms${
        call.error ? `  ERROR ${call.error}` : ""
      }`,
    );
  }
  if (sync.truncated) lines.push(`  call   … ${sync.truncated} more not recorded`);
  for (const step of sync.steps) {
    lines.push(
      `  step   ${step.action} ${step.target}${
        step.error ? `  FAILED ${step.error.reason}: ${step.error.message}` : ""
      }`,
    );
  }
  if (sync.status) lines.push(`  status ${statusLine(sync.status)}`);
  if (sync.error) lines.push(`  error  ${sync.error}`);
  return lines;
}

/**
 * The whole explanation: the answer, then the timeline.
 * @param trace the pod's trace
 * @param opts the time and log lines
 * @returns text ending with a newline
 */
export function renderExplanation(trace: PodSyncTrace, opts: RenderOptions): string {
  const lines = [
    explainAnswer(trace, opts),
    "",
    `last ${trace.syncs.length} sync(s) of ${trace.pod} (uid ${trace.uid}, times UTC), oldest first:`,
  ];
  for (const sync of trace.syncs) lines.push(...renderSync(sync));
  return `${lines.join("\n")}\n`;
}
