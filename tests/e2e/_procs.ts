/**
 * Starting, probing and stopping the e2e control plane's processes.
 *
 * Each process is started through `sh -c '… & echo $!'`, so it is not a child handle of
 * the test (a cluster may span several `Deno.test`s) and its output goes straight to its
 * log file. It is only ever signalled by its recorded PID, after checking that the PID
 * still runs with the cluster's directory in its arguments.
 *
 * @module
 */

import { exec, isAlive, processArgs, signalPid, tail, waitGone } from "../harness/_exec.ts";
import { LOG_TAIL_LINES, waitFor } from "../kit/mod.ts";

/** One control-plane process: how to start it, where it logs, and its PID once started. */
export interface Proc {
  /** Its name in messages, e.g. `kube-apiserver`. */
  name: string;
  /** Absolute path of the binary. */
  bin: string;
  /** Its arguments; each run (a restart too) uses the same ones. */
  args: string[];
  /** Log file; stdout and stderr of every run are appended. */
  log: string;
  /** PID of the latest run. */
  pid?: number;
}

/** Whether `pid` runs with our directory in its arguments (guards against PID reuse). */
export function isOurs(pid: number, dir: string): boolean {
  return isAlive(pid) && (processArgs(pid) ?? []).some((arg) => arg.includes(dir));
}

/**
 * Starts `proc` in the background, appending its output to its log, and records its PID.
 *
 * @throws Error when sh cannot start it
 */
export async function spawn(proc: Proc): Promise<void> {
  await Deno.writeTextFile(proc.log, `--- ${new Date().toISOString()} start\n`, { append: true });
  const { stdout } = await exec("sh", [
    "-c",
    'log=$1; shift; "$@" >>"$log" 2>&1 </dev/null & echo $!',
    "sh",
    proc.log,
    proc.bin,
    ...proc.args,
  ]);
  proc.pid = Number(stdout.trim());
}

/**
 * Stops `proc` if it is still our process: SIGTERM, then SIGKILL after `graceMs`.
 *
 * @param dir the cluster directory, which every process of ours names in its arguments
 * @param graceMs how long SIGTERM may take (default 15 s)
 * @throws Error when it survives SIGKILL
 */
export async function stopProc(proc: Proc, dir: string, graceMs = 15_000): Promise<void> {
  const pid = proc.pid;
  if (pid === undefined || !isOurs(pid, dir)) return;
  signalPid(pid, "SIGTERM");
  if (!await waitGone([pid], graceMs)) {
    signalPid(pid, "SIGKILL");
    if (!await waitGone([pid], 5_000)) {
      throw new Error(`e2e: ${proc.name} (pid ${pid}) survived SIGKILL`);
    }
  }
}

/**
 * Polls `ready` every 250 ms until it answers true.
 *
 * @throws WaitTimeoutError with the tail of `proc`'s log when `proc` exits or `deadline`
 *   (epoch ms) passes
 */
export async function waitReady(proc: Proc, deadline: number, ready: () => Promise<boolean>) {
  await waitFor(`${proc.name} (log: ${proc.log}) to become ready`, ready, {
    timeoutMs: Math.max(0, deadline - Date.now()),
    giveUp: () => proc.pid === undefined || !isAlive(proc.pid) ? "exited" : undefined,
    log: () => tail(proc.log, LOG_TAIL_LINES),
  });
}

/**
 * GETs `url` and tests the body; with `pki` the request is a TLS one as the cluster
 * admin. Any failure (refused, TLS, status) counts as not ready.
 */
export async function httpOk(url: string, body: RegExp, pki?: string): Promise<boolean> {
  const client = pki === undefined ? undefined : Deno.createHttpClient({
    caCerts: [await Deno.readTextFile(`${pki}/ca.crt`)],
    cert: await Deno.readTextFile(`${pki}/admin.crt`),
    key: await Deno.readTextFile(`${pki}/admin.key`),
  });
  try {
    const response = await fetch(url, {
      signal: AbortSignal.timeout(5_000),
      ...(client === undefined ? {} : { client }),
    });
    const text = await response.text();
    return response.ok && body.test(text.trim());
  } catch {
    return false;
  } finally {
    client?.close();
  }
}
