/**
 * Starting, probing and stopping one private containerd process, and running `ctr`
 * against it.
 *
 * containerd is started through `sh -c 'containerd … & echo $!'`, so it is not a child
 * handle of the test process: a runtime may outlive the `Deno.test` that started it
 * without tripping the resource sanitizer, and its output goes straight to a log file.
 * It is only ever signalled by the PID we recorded, after checking that this PID still
 * runs our config file.
 *
 * @module
 */

import { waitFor } from "../kit/mod.ts";
import {
  exec,
  type ExecOptions,
  type ExecResult,
  isAlive,
  processArgs,
  searchPath,
  signalPid,
  tail,
  waitGone,
} from "./_exec.ts";
import type { RuntimePaths } from "./config.ts";

/**
 * Runs `ctr` against the containerd at `paths.socket`.
 *
 * @param paths the runtime's paths
 * @param args ctr's arguments after the global flags
 * @param opts see {@link exec}
 */
export function ctr(
  paths: RuntimePaths,
  args: readonly string[],
  opts: ExecOptions = {},
): Promise<ExecResult> {
  return exec("ctr", ["--address", paths.socket, "--timeout", "10s", ...args], opts);
}

/**
 * Whether `pid` is the containerd started with `paths.config` (guards against PID reuse).
 *
 * @param pid a recorded PID
 * @param paths the runtime's paths
 */
export function isOurContainerd(pid: number, paths: RuntimePaths): boolean {
  const args = processArgs(pid);
  return args !== undefined && isAlive(pid) && args.includes(paths.config) &&
    (args[0] ?? "").endsWith("containerd");
}

function startupError(paths: RuntimePaths, what: string, cause?: unknown): Error {
  const log = tail(paths.log);
  return new Error(
    `harness: containerd at ${paths.socket} ${what}; last lines of ${paths.log}:\n${log}`,
    cause === undefined ? {} : { cause },
  );
}

/**
 * Starts containerd with `paths.config` and waits until its API answers and its CRI
 * plugin loaded.
 *
 * @param paths the runtime's paths
 * @param timeoutMs how long start-up may take
 * @param cgroupProcs `cgroup.procs` files the starting shell joins first, so containerd,
 *   its shims and their runc calls run in those cgroups (runtime.ts's `ownCpuCgroup`)
 * @returns containerd's PID
 * @throws Error with the tail of containerd's log when it exits or never answers
 */
export async function startContainerd(
  paths: RuntimePaths,
  timeoutMs = 30_000,
  cgroupProcs: readonly string[] = [],
): Promise<number> {
  const { stdout } = await exec("sh", [
    "-c",
    'c="$1" l="$2"; shift 2; for f; do echo $$ >"$f" || exit 1; done; ' +
    'containerd --config "$c" >>"$l" 2>&1 </dev/null & echo $!',
    "sh",
    paths.config,
    paths.log,
    ...cgroupProcs,
  ], { env: { PATH: searchPath() } }); // containerd and its shims look runc up on PATH

  const pid = Number(stdout.trim());
  if (!Number.isInteger(pid) || pid <= 0) throw startupError(paths, `did not start (${stdout})`);

  let lastError = "";
  try {
    await waitFor(`containerd at ${paths.socket} to answer`, async () => {
      const version = await ctr(paths, ["version"], { allowFailure: true });
      lastError = version.stderr.trim();
      return version.code === 0;
    }, {
      timeoutMs,
      intervalMs: 100,
      giveUp: () => isAlive(pid) ? undefined : "exited",
    });
  } catch (err) {
    if (!isAlive(pid)) throw startupError(paths, `exited during start-up (pid ${pid})`, err);
    await stopContainerd(pid, paths);
    throw startupError(paths, `did not answer within ${timeoutMs} ms (${lastError})`, err);
  }

  // A CRI plugin that failed to load leaves containerd up but useless: fail here, loudly.
  const plugins = await ctr(paths, ["plugins", "ls"]);
  const cri = plugins.stdout.split("\n").find((line) =>
    /\bio\.containerd\.grpc\.v1\s+cri\b/.test(line)
  );
  if (cri === undefined || !/\bok\s*$/.test(cri)) {
    await stopContainerd(pid, paths);
    throw startupError(paths, `has no working CRI plugin (${cri?.trim() ?? "not listed"})`);
  }
  return pid;
}

/**
 * Stops containerd by PID: SIGTERM, then SIGKILL if it lingers. Shims and containers it
 * started keep running (that is what a containerd restart looks like).
 *
 * @param pid containerd's PID
 * @param paths the runtime's paths
 * @param timeoutMs how long to wait after SIGTERM
 */
export async function stopContainerd(
  pid: number,
  paths: RuntimePaths,
  timeoutMs = 10_000,
): Promise<void> {
  if (!isOurContainerd(pid, paths)) return;
  signalPid(pid, "SIGTERM");
  if (await waitGone([pid], timeoutMs)) return;
  if (isOurContainerd(pid, paths)) signalPid(pid, "SIGKILL");
  if (!await waitGone([pid], 5_000)) {
    throw new Error(`harness: containerd ${pid} (${paths.socket}) survived SIGKILL`);
  }
}

/**
 * Kills containerd by PID with SIGKILL (a crash: no shutdown of its plugins), and waits
 * until it is gone. Shims and containers keep running.
 *
 * @param pid containerd's PID
 * @param paths the runtime's paths
 * @throws Error when it survives SIGKILL for 5 s
 */
export async function killContainerd(pid: number, paths: RuntimePaths): Promise<void> {
  if (!isOurContainerd(pid, paths)) return;
  signalPid(pid, "SIGKILL");
  if (!await waitGone([pid], 5_000)) {
    throw new Error(`harness: containerd ${pid} (${paths.socket}) survived SIGKILL`);
  }
}
